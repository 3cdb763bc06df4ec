#!/usr/bin/env bash
# k8s-newest.sh DIR K8S_VERSION CONTROLLER_RUNTIME_VERSION
#
# Copies the repository (its tracked files and untracked ones that are not
# ignored, as they are in the work tree) into DIR, then makes every module
# of the copy require k8s.io/api, apimachinery and client-go at K8S_VERSION,
# and controller-runtime at CONTROLLER_RUNTIME_VERSION where it requires
# controller-runtime: the newest pair, where the repository's go.mod files
# require the oldest it supports. Every module of the copy builds against
# the library in the copy (a replace; GOWORK=off, as the callers run it).
# `make test-k8s-newest` and `make bench` run in such a copy; the
# repository's own go.mod files are never changed.
set -euo pipefail

if [ $# -ne 3 ]; then
	echo "usage: $0 DIR K8S_VERSION CONTROLLER_RUNTIME_VERSION" >&2
	exit 2
fi
dir=$1 k8s=$2 cr=$3
root=$(git rev-parse --show-toplevel)
go=${GO:-go}

mkdir -p "$dir"
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
	tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$dir"

export GOWORK=off
for mod in $(cd "$dir" && find . -name go.mod -not -path './internal/tools/*' | sort); do
	m=$(dirname "$mod")
	(
		cd "$dir/$m"
		mods=(k8s.io/api@"$k8s" k8s.io/apimachinery@"$k8s" k8s.io/client-go@"$k8s")
		if ! grep -q '^[[:space:]]*k8s.io/client-go ' go.mod; then
			exit 0 # no k8s.io module to move (internal/moduletest)
		fi
		if grep -q '^[[:space:]]*sigs.k8s.io/controller-runtime ' go.mod; then
			mods+=(sigs.k8s.io/controller-runtime@"$cr")
		fi
		if [ "$m" != . ]; then
			rel=$(realpath --relative-to=. "$dir")
			"$go" mod edit -replace=github.com/kubetyped/informers="$rel"
		fi
		echo "== $m: go get ${mods[*]}"
		"$go" get "${mods[@]}"
		"$go" mod tidy
	)
done
