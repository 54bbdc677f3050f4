# Shared by tools/fresh_root.sh and tools/image.sh (source it; it defines
# functions only): a minimal Debian 12 root made by debootstrap, as bare as
# the debian:12 image, and a way to run commands chrooted in a copy of it.

# Where the bare root's tarball is kept between runs. It holds only what
# debootstrap installs, never a package of ours.
debian_root_cache=${PTOSERVE_ROOT_CACHE:-${HOME}/.cache/ptoserve-root}

debian_root_log() { echo "[$(date +%T)] $*" >&2; }

# The mirror this machine's apt uses (deb.debian.org if none is set).
debian_root_mirror() {
  local uri
  uri=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/debian.sources | awk '{print $2}' | grep -v security | head -n 1)
  [[ -n $uri ]] || uri=$(grep -hsE '^deb +http' /etc/apt/sources.list | awk '{print $2}' | head -n 1)
  echo "${uri:-http://deb.debian.org/debian}"
}

# Prints the path of a tarball of a bare bookworm root (debootstrap's
# minbase variant), making it if it is missing or older than a week.
debian_root_tarball() {
  local tarball=$debian_root_cache/bookworm-minbase.tar
  if [[ -f $tarball && -z $(find "$tarball" -mtime +7) ]]; then
    echo "$tarball"
    return 0
  fi
  if ! command -v debootstrap >/dev/null; then
    debian_root_log "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      debootstrap >/dev/null || return 1
  fi
  mkdir -p "$debian_root_cache"
  local dir
  dir=$(mktemp -d "$debian_root_cache/debootstrap.XXXXXX")
  debian_root_log "debootstrap bookworm (minbase) from $(debian_root_mirror)"
  if ! debootstrap --variant=minbase bookworm "$dir" "$(debian_root_mirror)" \
      >"$dir.log" 2>&1; then
    tail -n 20 "$dir.log" >&2
    rm -rf "$dir" "$dir.log"
    return 1
  fi
  # As the debian:12 image has it: apt's sources in deb822 form.
  rm -f "$dir/etc/apt/sources.list"
  cat >"$dir/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $(debian_root_mirror)
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $(debian_root_mirror | sed 's|/debian$|/debian-security|')
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
  tar -C "$dir" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  rm -rf "$dir" "$dir.log"
  echo "$tarball"
}

# Unpacks the bare root into DIR (which must not exist) and gives it what
# this machine's network needs: its resolver and its apt acquire settings
# (e.g. a mirror's snapshot dates). Nothing else of this machine goes in.
debian_root_unpack() {  # TARBALL DIR
  mkdir -p "$2"
  tar -C "$2" -xf "$1"
  # The tarball's top is the mktemp directory debootstrap filled (0700); a
  # Debian root is 0755, and users other than root must be able to run
  # its programs (the tests run a client as nobody).
  chmod 755 "$2"
  cp /etc/resolv.conf "$2/etc/resolv.conf"
  local f
  for f in /etc/apt/apt.conf.d/*; do
    if grep -qs '^Acquire::' "$f"; then cp "$f" "$2/etc/apt/apt.conf.d/"; fi
  done
}

# Runs a bash script chrooted in DIR as root, in a mount namespace of its
# own (proc, sys and dev are mounted there and vanish with it), with the
# environment of a root login.
debian_root_run() {  # DIR SCRIPT
  unshare --mount --propagation private -- bash -euo pipefail -c '
    root=$1
    mount -t proc proc "$root/proc"
    mount -t sysfs sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/tmp"
    exec chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      LANG=C.UTF-8 ${CI:+CI=$CI} /bin/bash -euo pipefail -c "$2"
  ' debian_root_run "$1" "$2"
}
