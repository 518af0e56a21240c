#!/usr/bin/env bash
# Runs bo-doctor's XRT backend on XRT's noop device, for machines without an NPU (CI, laptops).
# The noop device opens, loads xclbins, allocates and syncs BOs and completes every launch at
# once without computing anything (bo-doctor then runs each kernel's reference body on the host).
#
#   tool/xrt-noop-env.sh BUILD_DIR -- COMMAND [ARGS...]   run COMMAND with the noop environment
#   source tool/xrt-noop-env.sh BUILD_DIR                 export it into the current shell
#   eval "$(tool/xrt-noop-env.sh BUILD_DIR)"              same, from any POSIX shell
#
# e.g. tool/xrt-noop-env.sh build -- build/bo-doctor check model.json --backend xrt
#
# XRT loads its device shim from $XILINX_XRT/lib, but distributions (Debian's libxrt1) install
# the libraries elsewhere. This makes BUILD_DIR/xrt-noop/lib hold symlinks to the libxrt*/libxdp*
# libraries (cmake makes the same folder at configure time) and sets
# XILINX_XRT=BUILD_DIR/xrt-noop and XCL_EMULATION_MODE=noop. Set XRT_LIB_DIR to pick the
# directory holding libxrt_coreutil.so.2 by hand.

_bod_xrt_noop_usage() {
  echo "usage: tool/xrt-noop-env.sh BUILD_DIR [-- COMMAND [ARGS...]]" >&2
  echo "       source tool/xrt-noop-env.sh BUILD_DIR" >&2
}

# Prints the directory holding XRT's libraries (libxrt_coreutil.so.2 and libxrt_noop.so.2).
_bod_xrt_lib_dir() {
  if [ -n "${XRT_LIB_DIR:-}" ]; then
    echo "$XRT_LIB_DIR"
    return 0
  fi
  local found dir
  found=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null) |
    awk '/libxrt_coreutil\.so\.2 /{print $NF; exit}')
  if [ -n "$found" ]; then
    dirname "$(readlink -f "$found")"
    return 0
  fi
  for dir in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib \
    /opt/xilinx/xrt/lib; do
    if [ -e "$dir/libxrt_coreutil.so.2" ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

# Makes BUILD_DIR/xrt-noop/lib if it lacks the noop shim; prints the absolute xrt-noop path.
_bod_xrt_noop_dir() {
  local build="$1" noop lib libdir f
  mkdir -p "$build/xrt-noop/lib" || return 1
  noop=$(cd "$build/xrt-noop" && pwd) || return 1
  lib="$noop/lib"
  if [ ! -e "$lib/libxrt_noop.so.2" ]; then
    if ! libdir=$(_bod_xrt_lib_dir); then
      echo "xrt-noop-env: cannot find libxrt_coreutil.so.2; install XRT (Debian: apt-get install" \
        "libxrt-dev) or set XRT_LIB_DIR to the directory holding XRT's libraries" >&2
      return 1
    fi
    for f in "$libdir"/libxrt*.so* "$libdir"/libxdp*.so*; do
      [ -e "$f" ] && ln -sf "$f" "$lib/"
    done
    if [ ! -e "$lib/libxrt_noop.so.2" ]; then
      echo "xrt-noop-env: $libdir has no libxrt_noop.so.2 (XRT's noop shim); this XRT build" \
        "cannot run without a device" >&2
      return 1
    fi
  fi
  echo "$noop"
}

_bod_xrt_noop_main() {
  local sourced="$1"
  shift
  if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    _bod_xrt_noop_usage
    return 2
  fi
  local build="$1" noop
  shift
  noop=$(_bod_xrt_noop_dir "$build") || return 1
  if [ $# -gt 0 ]; then
    if [ "$1" != "--" ] || [ $# -lt 2 ]; then
      _bod_xrt_noop_usage
      return 2
    fi
    shift
    if [ "$sourced" = 1 ]; then
      XILINX_XRT="$noop" XCL_EMULATION_MODE=noop "$@"
      return $?
    fi
    export XILINX_XRT="$noop" XCL_EMULATION_MODE=noop
    exec "$@"
  fi
  if [ "$sourced" = 1 ]; then
    export XILINX_XRT="$noop" XCL_EMULATION_MODE=noop
    echo "xrt-noop-env: XILINX_XRT=$noop XCL_EMULATION_MODE=noop" >&2
  else
    printf 'export XILINX_XRT=%q XCL_EMULATION_MODE=noop\n' "$noop"
  fi
}

if [ -n "${BASH_SOURCE:-}" ] && [ "${BASH_SOURCE[0]}" != "$0" ]; then
  _bod_xrt_noop_main 1 "$@"
else
  _bod_xrt_noop_main 0 "$@"
  exit $?
fi
