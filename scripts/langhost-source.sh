#!/usr/bin/env bash
# Prepares a Go module in DIR that builds pulumi-language-nodejs for pulumi VERSION.
#
# Why this exists: since pulumi v3.69 the Node.js language host is its own, untagged Go module
# (sdk/nodejs/cmd/pulumi-language-nodejs/v3), and the Go module proxy reachable here refuses every
# version of it. The last sdk/v3 release that still carried the host inside the sdk/v3 module is
# v3.68.0, which the proxy serves. We take the host's Go sources from that module zip (downloaded by
# the go tool, never committed). The engine keeps backward compatibility with older language hosts
# (dotnet, java and yaml hosts ship at their own, older versions); the on-disk preview test checks it.
# VERSION (the CLI's) is accepted for the record and for a future host module the proxy may serve.
set -euo pipefail
DIR="$1"; VERSION="$2"
HOST_SDK="${BMW_LANGHOST_SDK_VERSION:-v3.68.0}"
export PATH="/usr/local/go/bin:$PATH" GOFLAGS=-mod=mod
src=$(go mod download -json "github.com/pulumi/pulumi/sdk/v3@$HOST_SDK" | node -e '
  let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);if(j.Error){console.error(j.Error);process.exit(1)}console.log(j.Dir)})')
[[ -f "$src/nodejs/cmd/pulumi-language-nodejs/main.go" ]] || { echo "sdk/v3@$HOST_SDK has no pulumi-language-nodejs" >&2; exit 1; }
rm -rf "$DIR"; mkdir -p "$DIR"
for f in "$src"/nodejs/cmd/pulumi-language-nodejs/*.go; do
  case "$f" in *_test.go) continue ;; esac
  cp "$f" "$DIR/"; chmod u+w "$DIR/$(basename "$f")"
done
cd "$DIR"
go mod init bmwbuild/pulumi-language-nodejs >/dev/null 2>&1
go mod edit -replace 'github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e'
# The v3.68.0 sources no longer compile against today's sdk (its StreamInvoke server API was removed),
# so the host is built with the sdk it was released with; the gRPC protocol between engine and host
# is versioned and backward compatible.
go get "github.com/pulumi/pulumi/sdk/v3@$HOST_SDK" >&2 && go mod tidy >&2
