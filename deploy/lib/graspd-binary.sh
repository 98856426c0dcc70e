# Sourced by the cluster scripts: finds the graspd binary to run.
# graspd_binary ROOT [BUILD_DIR]: prints BUILD_DIR/graspd (relative to the current directory when
# not absolute), or, without BUILD_DIR, the first of ROOT/build/release and ROOT/build/default that
# holds an executable graspd; prints nothing and returns 1 when there is none.
graspd_binary() {
  local root=$1 build_dir=${2:-} candidate
  if [[ -z "$build_dir" ]]; then
    for candidate in build/release build/default; do
      if [[ -x "$root/$candidate/graspd" ]]; then build_dir="$root/$candidate"; break; fi
    done
  fi
  [[ -n "$build_dir" && "$build_dir" != /* ]] && build_dir="$PWD/$build_dir"
  [[ -n "$build_dir" && -x "$build_dir/graspd" ]] || return 1
  echo "$build_dir/graspd"
}
