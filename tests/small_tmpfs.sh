# tests/small_tmpfs.sh — sourced by the tests that need a small filesystem (a full disk,
# a container's small /dev/shm): small_tmpfs SIZE sets $dir (a temporary folder, removed
# at exit) and $mnt (a tmpfs of SIZE mounted in it, unmounted at exit), or exits 77
# (CTest: skipped) where a tmpfs cannot be mounted (not root, or not allowed).
small_tmpfs() {
  dir=$(mktemp -d)
  mnt="$dir/mnt"
  mkdir -p "$mnt"
  trap 'umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null; mountpoint -q "$mnt" 2>/dev/null || rm -rf "$dir"' EXIT
  # (the trap never removes into a mount that is still there)
  if ! mount -t tmpfs -o "size=$1" tmpfs "$mnt" 2>/dev/null; then
    echo "SKIP: cannot mount a tmpfs here (not root, or not allowed)"
    exit 77
  fi
}
