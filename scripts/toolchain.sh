#!/usr/bin/env bash
# Builds the offline toolchain from the Go module proxy into a cache outside the repository:
#   pulumi CLI, pulumi-language-nodejs, the pulumi-resource-pulumi-nodejs shim,
#   pulumi-resource-kubernetes (installed into PULUMI_HOME), kube-apiserver, kube-controller-manager and etcd.
# Every piece is keyed by version and skipped when already built and verified. A piece of the pinned
# version already on this machine is used instead of building it (linked into the cache), found in:
#   pulumi CLI              $BMW_PULUMI_BIN, `pulumi` on PATH, ~/.pulumi/bin (checked by `pulumi version`)
#   pulumi-language-nodejs  beside that CLI (a release ships both together; the host has no version flag)
#   kubernetes plugin       $PULUMI_HOME or ~/.pulumi: plugins/resource-kubernetes-v<version> (pulumi's own layout)
#   kube-apiserver, kube-controller-manager, etcd
#                           $KUBEBUILDER_ASSETS (envtest's layout), PATH, /usr/local/kubebuilder/bin
#                           (checked by --version)
# BMW_TOOLCHAIN_BUILD_ONLY=1 ignores them and builds everything from the Go module proxy.
# Usage: scripts/toolchain.sh [all|pulumi|langhost|shim|kubernetes-provider|apiserver|controller-manager|etcd|env]...
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
# shellcheck source=versions.env
source "$HERE/versions.env"

CACHE="${BMW_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baremetal-workers}"
PULUMI_ROOT="$CACHE/pulumi/$PULUMI_VERSION"
PULUMI_HOME_DIR="$CACHE/pulumi-home"
K8S_BIN="$CACHE/kubernetes/$K8S_VERSION"
ETCD_BIN="$CACHE/etcd/$ETCD_VERSION"
KPROV_BIN="$CACHE/pulumi-resource-kubernetes/$KUBERNETES_PROVIDER_VERSION"
WORK="$CACHE/work"
LOGS="$CACHE/logs"

export PATH="/usr/local/go/bin:$PATH"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export PULUMI_SKIP_UPDATE_CHECK=true PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true

CLIP='github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e'
PULUMI_LDFLAGS="-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION"
PULUMI_TAGS=osusergo,grpcnotrace

log() { printf '[toolchain] %s\n' "$*" >&2; }
die() { printf '[toolchain] ERROR: %s\n' "$*" >&2; exit 1; }

need() {
  command -v "$1" >/dev/null 2>&1 || die "missing prerequisite '$1' ($2)"
}

# step NAME CMD...: runs a build step with its duration and peak memory, output to a log file.
step() {
  local name="$1"; shift
  mkdir -p "$LOGS"
  local logf="$LOGS/$name.log" t0 t1 rss
  log "building $name (log: $logf)"
  t0=$(date +%s)
  if ! /usr/bin/time -f '%M' -o "$LOGS/$name.rss" "$@" >"$logf" 2>&1; then
    tail -40 "$logf" >&2
    die "building $name failed; see $logf"
  fi
  t1=$(date +%s)
  rss=$(tail -1 "$LOGS/$name.rss" 2>/dev/null || echo '?')
  log "built $name in $((t1 - t0)) s, peak RSS of the go command ${rss} KiB"
  printf '%s seconds=%s peak_rss_kib=%s\n' "$name" "$((t1 - t0))" "$rss" >>"$LOGS/timings.txt"
}

# adopt NAME DEST CHECK CANDIDATE...: links DEST to the first existing candidate for which `CHECK candidate`
# succeeds; returns 1 when none does (the caller then builds).
adopt() {
  local name="$1" dest="$2" check="$3" c; shift 3
  [[ "${BMW_TOOLCHAIN_BUILD_ONLY:-}" == 1 ]] && return 1
  for c in "$@"; do
    [[ -n "$c" && -x "$c" && ! "$c" -ef "$dest" ]] || continue
    "$check" "$c" || continue
    mkdir -p "$(dirname "$dest")"
    ln -sfn "$(readlink -f "$c")" "$dest"
    log "$name: using $(readlink -f "$c") (pinned version found on this machine)"
    printf '%s adopted=%s\n' "$name" "$(readlink -f "$c")" >>"$LOGS/timings.txt" 2>/dev/null || true
    return 0
  done
  return 1
}

pulumi_is_pinned() { [[ "$("$1" version 2>/dev/null)" == "v$PULUMI_VERSION" ]]; }
k8s_is_pinned() { grep -qx "Kubernetes v$K8S_VERSION" <<<"$("$1" --version 2>/dev/null)"; }
etcd_is_pinned() { grep -q "etcd Version: $ETCD_VERSION" <<<"$("$1" --version 2>/dev/null)"; }
exists() { [[ -x "$1" ]]; }

# Candidates for a Kubernetes test binary, in envtest's order of precedence.
k8s_candidates() {
  printf '%s\n' "${KUBEBUILDER_ASSETS:+$KUBEBUILDER_ASSETS/$1}" "$(command -v "$1" 2>/dev/null || true)" "/usr/local/kubebuilder/bin/$1"
}

gomod_json() { # gomod_json MODULE@VERSION FIELD
  go mod download -json "$1" | node -e '
    let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);
    if(j.Error){console.error(j.Error);process.exit(1)}const v=j[process.argv[1]];
    if(v==null)process.exit(1);console.log(v)})' "$2"
}

fresh_module() { # fresh_module DIR NAME
  rm -rf "$1"; mkdir -p "$1"; (cd "$1" && go mod init "$2" >/dev/null 2>&1)
}

check_prereqs() {
  need go "Go >= 1.25 at /usr/local/go/bin; the machines of this kind ship it"
  need node "Node.js, used to read go's JSON output"
  need openssl "Debian package openssl"
  [[ -x /usr/bin/time ]] || die "missing /usr/bin/time (Debian package 'time')"
  local gv
  gv=$(go env GOVERSION | sed 's/^go//')
  [[ "$(printf '%s\n1.25.0\n' "$gv" | sort -V | head -1)" == 1.25.0 ]] || die "Go $gv is too old; need >= 1.25"
  # The engine asks for exactly the kubernetes plugin version that @pulumi/kubernetes declares, and the
  # CLI must not be older than the SDK: catch a version bump made in one place only.
  local npm_pulumi npm_k8s
  npm_pulumi=$(node -p 'require(process.argv[1]).dependencies["@pulumi/pulumi"]' "$REPO/package.json")
  npm_k8s=$(node -p 'require(process.argv[1]).dependencies["@pulumi/kubernetes"]' "$REPO/package.json")
  [[ "$npm_k8s" == "$KUBERNETES_PROVIDER_VERSION" ]] \
    || die "package.json pins @pulumi/kubernetes $npm_k8s but scripts/versions.env builds $KUBERNETES_PROVIDER_VERSION"
  [[ "$(printf '%s\n%s\n' "$npm_pulumi" "$PULUMI_VERSION" | sort -V | tail -1)" == "$PULUMI_VERSION" ]] \
    || die "pulumi CLI $PULUMI_VERSION is older than @pulumi/pulumi $npm_pulumi in package.json"
}

# ---------------------------------------------------------------- pulumi CLI
build_pulumi() {
  local bin="$PULUMI_ROOT/bin/pulumi"
  if [[ -x "$bin" && "$("$bin" version 2>/dev/null)" == "v$PULUMI_VERSION" ]]; then
    log "pulumi v$PULUMI_VERSION present"; return
  fi
  mkdir -p "$PULUMI_ROOT/bin" "$LOGS"
  adopt pulumi "$bin" pulumi_is_pinned "${BMW_PULUMI_BIN:-}" "$(command -v pulumi 2>/dev/null || true)" "$HOME/.pulumi/bin/pulumi" && return
  local d="$WORK/pulumi-cli"
  fresh_module "$d" bmwbuild/pulumi-cli
  step "pulumi-cli-$PULUMI_VERSION" bash -c "cd '$d' && go mod edit -replace '$CLIP' \
    && go get github.com/pulumi/pulumi/sdk/v3@v$PULUMI_VERSION \
    && go get github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@v$PULUMI_VERSION \
    && go build -trimpath -tags '$PULUMI_TAGS' -ldflags '$PULUMI_LDFLAGS' -o '$bin.tmp' github.com/pulumi/pulumi/pkg/v3/cmd/pulumi \
    && mv '$bin.tmp' '$bin'"
  local got; got=$("$bin" version)
  [[ "$got" == "v$PULUMI_VERSION" ]] || die "pulumi version printed '$got', expected v$PULUMI_VERSION"
  log "pulumi version: $got"
}

# ------------------------------------------------------ pulumi-language-nodejs
build_langhost() {
  local bin="$PULUMI_ROOT/bin/pulumi-language-nodejs"
  if [[ -x "$bin" && -f "$bin.stamp" && "$(cat "$bin.stamp")" == "$PULUMI_VERSION" ]]; then
    log "pulumi-language-nodejs present"; return
  fi
  mkdir -p "$PULUMI_ROOT/bin" "$LOGS"
  local cli="$PULUMI_ROOT/bin/pulumi"
  if [[ -L "$cli" ]] && adopt pulumi-language-nodejs "$bin" exists "$(dirname "$(readlink -f "$cli")")/pulumi-language-nodejs"; then
    echo "$PULUMI_VERSION" >"$bin.stamp"; return
  fi
  local d="$WORK/pulumi-langhost"
  step "pulumi-language-nodejs-$PULUMI_VERSION" bash -c "'$HERE/langhost-source.sh' '$d' '$PULUMI_VERSION' \
    && cd '$d' && go build -trimpath -tags '$PULUMI_TAGS' -ldflags '$PULUMI_LDFLAGS' -o '$bin.tmp' . && mv '$bin.tmp' '$bin'"
  echo "$PULUMI_VERSION" >"$bin.stamp"
}

# ---------------------------------------------- dynamic-provider shim (ours)
install_shim() {
  local bin="$PULUMI_ROOT/bin/pulumi-resource-pulumi-nodejs"
  mkdir -p "$PULUMI_ROOT/bin"
  # exec so that signals reach node; resolve @pulumi/pulumi from the program's cwd as upstream does.
  cat >"$bin.tmp" <<'EOF'
#!/bin/sh
# pulumi-resource-pulumi-nodejs: runs @pulumi/pulumi's dynamic-provider host with the node on PATH.
script="${PULUMI_DYNAMIC_PROVIDER_SCRIPT_PATH:-$(node -e "process.stdout.write(require.resolve('@pulumi/pulumi/cmd/dynamic-provider'))")}" || exit 1
exec node "$script" "$@"
EOF
  chmod 0755 "$bin.tmp"; mv "$bin.tmp" "$bin"
}

# ---------------------------------------------------- pulumi-resource-kubernetes
build_kubernetes_provider() {
  local bin="$KPROV_BIN/pulumi-resource-kubernetes"
  local want="$KUBERNETES_PROVIDER_VERSION $KUBERNETES_PROVIDER_MODULE"
  if ! [[ -x "$bin" && "$(cat "$bin.stamp" 2>/dev/null)" == "$want" ]]; then
    mkdir -p "$KPROV_BIN" "$LOGS"
    local plug="plugins/resource-kubernetes-v$KUBERNETES_PROVIDER_VERSION/pulumi-resource-kubernetes"
    if adopt pulumi-resource-kubernetes "$bin" exists "${PULUMI_HOME:+$PULUMI_HOME/$plug}" "$HOME/.pulumi/$plug"; then
      echo "$want" >"$bin.stamp"
    fi
  fi
  if ! [[ -x "$bin" && "$(cat "$bin.stamp" 2>/dev/null)" == "$want" ]]; then
    local pdir sdir d="$WORK/pulumi-kubernetes-provider"
    pdir=$(gomod_json "github.com/pulumi/pulumi-kubernetes/provider/v4@$KUBERNETES_PROVIDER_MODULE" Dir) \
      || die "Go module proxy did not serve pulumi-kubernetes/provider/v4@$KUBERNETES_PROVIDER_MODULE"
    sdir=$(gomod_json "github.com/pulumi/pulumi-kubernetes/sdk/v4@v$KUBERNETES_PROVIDER_VERSION" Dir) \
      || die "Go module proxy did not serve pulumi-kubernetes/sdk/v4@v$KUBERNETES_PROVIDER_VERSION"
    rm -rf "$d"; cp -r "$pdir" "$d"; chmod -R u+w "$d"
    # The embedded schema files are gitignored upstream, so the module zip lacks them: generate.
    step "pulumi-resource-kubernetes-$KUBERNETES_PROVIDER_VERSION" bash -c "cd '$d' \
      && go mod edit -replace 'github.com/pulumi/pulumi-kubernetes/sdk/v4=$sdir' \
      && (cd cmd/pulumi-resource-kubernetes && VERSION='$KUBERNETES_PROVIDER_VERSION' go run generate.go) \
      && go build -trimpath -ldflags '-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$KUBERNETES_PROVIDER_VERSION' \
         -o '$bin.tmp' ./cmd/pulumi-resource-kubernetes && mv '$bin.tmp' '$bin'"
    echo "$want" >"$bin.stamp"
  fi
  local plugdir="$PULUMI_HOME_DIR/plugins/resource-kubernetes-v$KUBERNETES_PROVIDER_VERSION"
  if [[ ! -x "$plugdir/pulumi-resource-kubernetes" ]] || ! cmp -s "$bin" "$plugdir/pulumi-resource-kubernetes"; then
    PULUMI_HOME="$PULUMI_HOME_DIR" "$PULUMI_ROOT/bin/pulumi" plugin install resource kubernetes \
      "$KUBERNETES_PROVIDER_VERSION" --file "$bin" --reinstall >&2 \
      || die "pulumi plugin install of the kubernetes provider failed"
  fi
  log "kubernetes provider v$KUBERNETES_PROVIDER_VERSION installed in $PULUMI_HOME_DIR"
}

# --------------------------------------------------------------- kube-apiserver
build_apiserver() {
  local bin="$K8S_BIN/kube-apiserver"
  if [[ -x "$bin" ]] && grep -qx "Kubernetes v$K8S_VERSION" <<<"$("$bin" --version 2>/dev/null)"; then
    log "kube-apiserver v$K8S_VERSION present"; return
  fi
  mkdir -p "$K8S_BIN" "$LOGS"
  # shellcheck disable=SC2046
  adopt kube-apiserver "$bin" k8s_is_pinned $(k8s_candidates kube-apiserver) && return
  local d="$WORK/kube-apiserver" kgomod minor
  fresh_module "$d" bmwbuild/kube-apiserver
  kgomod=$(gomod_json "k8s.io/kubernetes@v$K8S_VERSION" GoMod) || die "Go module proxy did not serve k8s.io/kubernetes@v$K8S_VERSION"
  grep -E '^godebug' "$kgomod" >>"$d/go.mod" || true
  # k8s.io/kubernetes requires its staging modules at v0.0.0 via local replaces; map each to its tag.
  local m
  for m in $(sed -n 's|^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*|\1|p' "$kgomod"); do
    (cd "$d" && go mod edit "-replace=$m=$m@v0.${K8S_VERSION#1.}")
  done
  minor=$(cut -d. -f2 <<<"$K8S_VERSION")
  local V=k8s.io/component-base/version
  step "kube-apiserver-$K8S_VERSION" bash -c "cd '$d' && go get k8s.io/kubernetes/cmd/kube-apiserver@v$K8S_VERSION \
    && go build -trimpath -o '$bin.tmp' -ldflags '-s -w -X $V.gitVersion=v$K8S_VERSION -X $V.gitMajor=1 \
       -X $V.gitMinor=$minor -X $V.gitTreeState=clean -X $V.buildDate=1970-01-01T00:00:00Z' \
       k8s.io/kubernetes/cmd/kube-apiserver && mv '$bin.tmp' '$bin'"
  grep -qx "Kubernetes v$K8S_VERSION" <<<"$("$bin" --version 2>/dev/null)" || die "kube-apiserver does not report v$K8S_VERSION"
}

# ------------------------------------------------------- kube-controller-manager
# Only its namespace and garbage-collector controllers run in the test plane, so that namespaces
# finish deleting, foreground deletion completes and ownerReferences cascade as on a real hub.
build_controller_manager() {
  local bin="$K8S_BIN/kube-controller-manager"
  if [[ -x "$bin" ]] && grep -qx "Kubernetes v$K8S_VERSION" <<<"$("$bin" --version 2>/dev/null)"; then
    log "kube-controller-manager v$K8S_VERSION present"; return
  fi
  mkdir -p "$K8S_BIN" "$LOGS"
  # shellcheck disable=SC2046
  adopt kube-controller-manager "$bin" k8s_is_pinned $(k8s_candidates kube-controller-manager) && return
  # Building needs the apiserver's Go module: build that apiserver too, even if one was found.
  [[ -f "$WORK/kube-apiserver/go.mod" ]] || { rm -f "$K8S_BIN/kube-apiserver"; BMW_TOOLCHAIN_BUILD_ONLY=1 build_apiserver; }
  local minor V=k8s.io/component-base/version d="$WORK/kube-apiserver"
  minor=$(cut -d. -f2 <<<"$K8S_VERSION")
  step "kube-controller-manager-$K8S_VERSION" bash -c "cd '$d' && go get k8s.io/kubernetes/cmd/kube-controller-manager@v$K8S_VERSION \
    && go build -trimpath -o '$bin.tmp' -ldflags '-s -w -X $V.gitVersion=v$K8S_VERSION -X $V.gitMajor=1 \
       -X $V.gitMinor=$minor -X $V.gitTreeState=clean -X $V.buildDate=1970-01-01T00:00:00Z' \
       k8s.io/kubernetes/cmd/kube-controller-manager && mv '$bin.tmp' '$bin'"
  grep -qx "Kubernetes v$K8S_VERSION" <<<"$("$bin" --version 2>/dev/null)" || die "kube-controller-manager does not report v$K8S_VERSION"
}

# ------------------------------------------------------------------------ etcd
build_etcd() {
  local bin="$ETCD_BIN/etcd"
  if [[ -x "$bin" ]] && grep -q "etcd Version: $ETCD_VERSION" <<<"$("$bin" --version 2>/dev/null)"; then
    log "etcd $ETCD_VERSION present"; return
  fi
  mkdir -p "$ETCD_BIN" "$LOGS"
  # shellcheck disable=SC2046
  adopt etcd "$bin" etcd_is_pinned $(k8s_candidates etcd) && return
  local d="$WORK/etcd"
  fresh_module "$d" bmwbuild/etcd
  # etcd's own version string comes from its module (api/v3/version), so no -X is needed.
  step "etcd-$ETCD_VERSION" bash -c "cd '$d' && go get go.etcd.io/etcd/server/v3@v$ETCD_VERSION \
    && go build -trimpath -ldflags '-s -w' -o '$bin.tmp' go.etcd.io/etcd/server/v3 && mv '$bin.tmp' '$bin'"
  grep -q "etcd Version: $ETCD_VERSION" <<<"$("$bin" --version 2>/dev/null)" || die "etcd does not report $ETCD_VERSION"
}

print_env() {
  cat <<EOF
BMW_PULUMI_ROOT=$PULUMI_ROOT
PULUMI_HOME=$PULUMI_HOME_DIR
BMW_KUBE_APISERVER=$K8S_BIN/kube-apiserver
BMW_KUBE_CONTROLLER_MANAGER=$K8S_BIN/kube-controller-manager
BMW_ETCD=$ETCD_BIN/etcd
EOF
}

main() {
  local targets=("$@")
  [[ ${#targets[@]} -gt 0 ]] || targets=(all)
  check_prereqs
  local t0; t0=$(date +%s)
  for t in "${targets[@]}"; do
    case "$t" in
      all) build_pulumi; install_shim; build_langhost; build_kubernetes_provider; build_etcd; build_apiserver; build_controller_manager ;;
      pulumi) build_pulumi ;;
      shim) install_shim ;;
      langhost) build_langhost ;;
      kubernetes-provider) build_kubernetes_provider ;;
      apiserver) build_apiserver ;;
      controller-manager) build_controller_manager ;;
      etcd) build_etcd ;;
      env) print_env; continue ;;
      *) die "unknown target '$t'" ;;
    esac
  done
  log "toolchain ready in $(( $(date +%s) - t0 )) s (cache: $CACHE)"
}

main "$@"
