#!/bin/bash
# The GPU node's offline bundles, packed into ignored folders with ../shared/gpu-bundle/pack.sh in parts of
# 29 MiB: a call carries 64 MiB with the tracked tree, so two parts a call where reports/ (~75 MB) is set
# aside for the session's calls (the rest of the tree: ~2.5 MB); parts of different bundles may share a
# call (unpack.sh gathers each bundle's parts by its id). Minutes of CPU (XZ_LEVEL=6: a few): start it early.
#
#   bash tools/gpu_bundles.sh [lab | lab-lite | cutile | tilelang | ray ...]     (default: lab cutile tilelang)
#   bash tools/gpu_bundles.sh resplit DIR...       a packed bundle's parts cut again to PART_MIB (seconds, no repacking)
#
# lab       requirements/gpu-node.txt                 -> .gpu-bundle-lab/K       (unpack: bash .gpu-bundle-lab/K/unpack.sh)
# lab-lite  the same without warp-lang and nvmath     -> .gpu-bundle-lab/K       (fewer parts, for steps that need neither)
# cutile    requirements/cutile-site.txt              -> .gpu-bundle-cutile/K    (unpack with GPU_SITE=/tmp/cutile-site)
# tilelang  requirements/tilelang-site.txt            -> .gpu-bundle-tilelang/K  (unpack with GPU_SITE=/tmp/tilelang-site)
# ray       requirements/ray-node.txt                 -> .gpu-bundle-ray/K       (unpack with GPU_SITE=/tmp/ray-site)
set -euo pipefail
cd "$(dirname "$0")/.."
pack=${PACK_SH:-../shared/gpu-bundle/pack.sh}
export PART_MIB=${PART_MIB:-29}
pins() { sed 's/#.*//' "$1" | awk 'NF'; }
[ $# -gt 0 ] || set -- lab cutile tilelang
if [ "$1" = resplit ]; then
  shift
  for dir in "$@"; do
    . "$dir/0/MANIFEST"; work=$(mktemp -d)
    for k in $(seq 0 $((total - 1))); do cat "$dir/$k/part"; done > "$work/bundle"
    split -b "${PART_MIB}M" -d -a 2 "$work/bundle" "$work/part."; rm "$work/bundle"
    n=$(ls "$work"/part.* | wc -l); find "$dir" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
    k=0; for p in "$work"/part.*; do
      mkdir -p "$dir/$k"; mv "$p" "$dir/$k/part"; cp "$(dirname "$pack")/unpack.sh" "$dir/$k/"
      printf 'id=%s\nindex=%s\ntotal=%s\n' "$id" "$k" "$n" > "$dir/$k/MANIFEST"; k=$((k + 1))
    done
    rmdir "$work"; echo "gpu_bundles.sh: $dir: bundle $id in $n part(s) of at most $PART_MIB MiB"
  done
  exit 0
fi
for what in "$@"; do case $what in
  lab)      bash "$pack" .gpu-bundle-lab $(pins requirements/gpu-node.txt) ;;
  lab-lite) bash "$pack" .gpu-bundle-lab $(pins requirements/gpu-node.txt | grep -v -E '^(warp-lang|nvmath-python|nvidia-libmathdx)') ;;
  cutile)   bash "$pack" .gpu-bundle-cutile $(pins requirements/cutile-site.txt) ;;
  tilelang) bash "$pack" .gpu-bundle-tilelang $(pins requirements/tilelang-site.txt) ;;
  ray)      bash "$pack" .gpu-bundle-ray $(pins requirements/ray-node.txt) ;;
  *) echo "gpu_bundles.sh: unknown bundle $what (lab, lab-lite, cutile, tilelang, ray)" >&2; exit 2 ;;
esac; done
