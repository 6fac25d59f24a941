#!/usr/bin/env bash
# The release build the packages carry, in its own build folder (.build/static)
# so that it does not disturb `swift build`'s:
#   scripts/build-static.sh [PRODUCT...]     (default: tutti-follower tutti tuttid)
# The Swift runtime is linked in (-static-swift-stdlib), and so is libstdc++,
# the runtime's C++ library: the toolchain asks for it with -lstdc++, which
# lld resolves to the first folder holding libstdc++.so or .a, so a folder
# that holds only the archive comes first. A speaker then maps the little of
# it that it uses, not the whole shared library (whose symbol tables alone
# kept 0.7 MiB resident). Without an archive (libstdc++-12-dev), it stays shared.
# (A cross build, docs/pi.md, links libstdc++ shared: this folder is the host's.)
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build/static
products=("$@")
((${#products[@]})) || products=(tutti-follower tutti tuttid)
archive=$(clang++ -print-file-name=libstdc++.a 2>/dev/null || true)
flags=()
if [[ "$archive" == /* && -f "$archive" ]]; then
    mkdir -p "$scratch/libstdc++"
    ln -sfn "$archive" "$scratch/libstdc++/libstdc++.a"
    flags=(-Xlinker "-L$PWD/$scratch/libstdc++")
else
    echo "build-static.sh: no libstdc++.a found: libstdc++ stays a shared library" >&2
fi
for product in "${products[@]}"; do
    swift build -c release --static-swift-stdlib --scratch-path "$scratch" "${flags[@]}" --product "$product"
done
