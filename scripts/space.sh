#!/usr/bin/env bash
# Write a Hugging Face Space repository into OUT (created, or emptied of what this script wrote):
#
#   bash scripts/space.sh OUT
#
# OUT then holds exactly what the Space builder needs: README.md (its front matter from
# space_config.yaml), app.py, the ui/ and auditor/ packages (bundled examples and model files
# included), requirements.txt (the app's pins and the semantic extra's, so the Paraphrases view
# works), docs/, and .gitattributes (binary files through Git LFS). No tests, no benchmarks.
# docs/space.md says how to push it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bash scripts/space.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
case "$out" in "$(pwd)"|"$(pwd)"/*) echo "space.sh: OUT must be outside the checkout" >&2; exit 2;; esac
rm -rf "$out/auditor" "$out/ui" "$out/docs" "$out/app.py" "$out/README.md" "$out/requirements.txt" \
       "$out/.gitattributes"
copy_package() {   # a package's files, without caches or compiled files
  (cd "$1" && find . -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0) |
    while IFS= read -r -d '' f; do mkdir -p "$out/$1/$(dirname "$f")"; cp "$1/$f" "$out/$1/$f"; done
}
copy_package auditor
copy_package ui
[ -d docs ] && copy_package docs
cp app.py "$out/app.py"
PYTHON=${PYTHON:-python3}
"$PYTHON" - "$out" <<'PY'
import re
import sys
from pathlib import Path

out = Path(sys.argv[1])
config = [line for line in Path("space_config.yaml").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
gradio = re.search(r"^gradio==(\S+)", Path("requirements.txt").read_text(encoding="utf-8"), re.M).group(1)
version = next(line.split(":", 1)[1].strip().strip('"') for line in config if line.startswith("sdk_version:"))
if version != gradio:
    sys.exit(f"space.sh: space_config.yaml's sdk_version {version} is not requirements.txt's gradio {gradio}")
body = Path("README.md").read_text(encoding="utf-8")
space_note = ("> This is the Space of the Dataset Integrity Auditor: the app runs here; the library and the "
              "`auditor` command are the same code (see below). docs/space.md says how the Space is hosted "
              "and what the free CPU tier holds.\n\n")
(out / "README.md").write_text("---\n" + "\n".join(config) + "\n---\n\n" + space_note + body, encoding="utf-8")

# requirements.txt: the app's pins, and the semantic extra's from requirements-dev.txt.
pins = [line for line in Path("requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith(("#", "-"))]
dev, semantic, inside = Path("requirements-dev.txt").read_text(encoding="utf-8").splitlines(), [], False
for line in dev:
    if line.startswith("#"):
        inside = "`semantic` extra" in line
        continue
    if inside and line.strip():
        semantic.append(line.strip())
if not semantic:
    sys.exit("space.sh: no semantic extra pins found in requirements-dev.txt")
(out / "requirements.txt").write_text(
    "# The Space's packages, pinned as measured (written by scripts/space.sh from requirements.txt and the\n"
    "# semantic extra of requirements-dev.txt).\n" + "\n".join(pins + semantic) + "\n", encoding="utf-8")
(out / ".gitattributes").write_text("".join(f"{p} filter=lfs diff=lfs merge=lfs -text\n" for p in
                                            ("*.gz", "*.onnx", "*.bin", "*.parquet", "*.npy")), encoding="utf-8")
PY
echo "wrote the Space repository in $out"
