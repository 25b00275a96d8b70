#!/bin/bash
# The GPU node's offline bundles, packed into ignored folders with ../shared/gpu-bundle/pack.sh in parts of
# 32 MiB (with the ~16 MiB tree, one part fits a call's 64 MiB; 48 MiB parts stopped fitting).
# Minutes of CPU (xz -9): start it early.
#
#   bash tools/gpu_bundles.sh [lab | lab-lite | cutile | tilelang ...]     (default: lab cutile tilelang)
#
# lab       requirements/gpu-node.txt                 -> .gpu-bundle-lab/K       (unpack: bash .gpu-bundle-lab/K/unpack.sh)
# lab-lite  the same without warp-lang and nvmath     -> .gpu-bundle-lab/K       (fewer parts, for steps that need neither)
# cutile    requirements/cutile-site.txt              -> .gpu-bundle-cutile/K    (unpack with GPU_SITE=/tmp/cutile-site)
# tilelang  requirements/tilelang-site.txt            -> .gpu-bundle-tilelang/K  (unpack with GPU_SITE=/tmp/tilelang-site)
set -euo pipefail
cd "$(dirname "$0")/.."
pack=${PACK_SH:-../shared/gpu-bundle/pack.sh}
export PART_MIB=${PART_MIB:-32}
pins() { sed 's/#.*//' "$1" | awk 'NF'; }
[ $# -gt 0 ] || set -- lab cutile tilelang
for what in "$@"; do case $what in
  lab)      bash "$pack" .gpu-bundle-lab $(pins requirements/gpu-node.txt) ;;
  lab-lite) bash "$pack" .gpu-bundle-lab $(pins requirements/gpu-node.txt | grep -v -E '^(warp-lang|nvmath-python|nvidia-libmathdx)') ;;
  cutile)   bash "$pack" .gpu-bundle-cutile $(pins requirements/cutile-site.txt) ;;
  tilelang) bash "$pack" .gpu-bundle-tilelang $(pins requirements/tilelang-site.txt) ;;
  *) echo "gpu_bundles.sh: unknown bundle $what (lab, lab-lite, cutile, tilelang)" >&2; exit 2 ;;
esac; done
