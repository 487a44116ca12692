#!/usr/bin/env bash
# Source this on the GPU test host (see ../shared/GPU_HOST.md): it unpacks the Debian
# packages the host lacks (METIS, cJSON, inih, cmocka, libzip), downloaded beforehand into
# .gpu-deps/ with `apt-get download`, into .gpu-deps/root and points CMake,
# pkg-config and the loader at them. Nothing is installed into /.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=$here/.gpu-deps/root
if [ ! -d "$root/usr" ]; then
  mkdir -p "$root"
  for f in "$here"/.gpu-deps/*.deb; do dpkg -x "$f" "$root"; done
  for pc in "$root"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$root"/usr/share/pkgconfig/*.pc; do
    # some .pc files use ${prefix}, others (cmocka) absolute /usr paths: rewrite both
    [ -f "$pc" ] && sed -i -e "s|^prefix=.*|prefix=$root/usr|" -e "s|-I/usr/|-I$root/usr/|g" \
                           -e "s|-L/usr/|-L$root/usr/|g" "$pc"
  done
fi
export CMAKE_PREFIX_PATH=$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
export PKG_CONFIG_PATH=$root/usr/lib/x86_64-linux-gnu/pkgconfig:$root/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export METIS_ROOT=$root/usr
