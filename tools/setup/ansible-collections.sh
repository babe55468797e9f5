#!/usr/bin/env bash
# The containers.podman Ansible collection (its podman connection plugin), for applying
# runners/site.yml to a podman container in tests/integration/test_runner_provisioning.py.
#
# Galaxy is not needed: PyPI's `ansible` package bundles the collection. Its wheel (pinned by
# version and sha256) is downloaded once and only ansible_collections/containers/podman is
# unpacked into .cache/ansible/collections (point ANSIBLE_COLLECTIONS_PATH there). The roles
# themselves stay ansible.builtin-only; the collection is a test tool. Idempotent.
set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
ANSIBLE_WHEEL_VERSION=12.3.0   # bundles containers.podman 1.18.0; made for ansible-core 2.19
ANSIBLE_WHEEL_SHA256=cd156f82fa87f7a899212b0efa9f7ca3a24d609212de9f78428a572eb01e5414
dest=$repo_root/.cache/ansible/collections
stamp=$dest/ansible_collections/containers/podman/.from-ansible-$ANSIBLE_WHEEL_VERSION

if [[ -f $stamp ]]; then
  echo "containers.podman ok ($(dirname "$stamp"))"
  exit 0
fi
python=$repo_root/.venv/bin/python
[[ -x $python ]] || python=python3
download=$(mktemp -d)
trap 'rm -rf -- "$download"' EXIT
printf 'ansible==%s --hash=sha256:%s\n' "$ANSIBLE_WHEEL_VERSION" "$ANSIBLE_WHEEL_SHA256" >"$download/req.txt"
"$python" -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
  -r "$download/req.txt" -d "$download"
rm -rf -- "$dest/ansible_collections/containers/podman"
mkdir -p -- "$dest"
"$python" - "$download"/ansible-"$ANSIBLE_WHEEL_VERSION"-*.whl "$dest" <<'EOF'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
prefix = "ansible_collections/containers/podman/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix)]
    if not names:
        sys.exit(f"{wheel} has no {prefix}")
    z.extractall(dest, names)
EOF
touch -- "$stamp"
echo "containers.podman installed into $dest"
