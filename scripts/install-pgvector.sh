#!/usr/bin/env bash
# Builds and installs pgvector for the machine's PostgreSQL server when its `vector` extension is
# missing (Debian 12 ships no pgvector binary package). The source comes from Debian's own
# pgvector source package of the next release, fetched through the mirror this machine's apt is
# already configured with, so no other host is named here. Runs as root; takes about 20 s.
# Idempotent: does nothing when the extension is already available.
set -euo pipefail

pg_version="$(ls /usr/lib/postgresql | sort -n | tail -1)"
sharedir="/usr/share/postgresql/${pg_version}/extension"
if [ -f "${sharedir}/vector.control" ]; then
  echo "pgvector: already installed for PostgreSQL ${pg_version}"
  exit 0
fi

sources=/etc/apt/sources.list.d/debian.sources
mirror="$(awk '/^URIs:/ { print $2; exit }' "$sources" 2>/dev/null || true)"
keyring="$(awk '/^Signed-By:/ { print $2; exit }' "$sources" 2>/dev/null || true)"
if [ -z "$mirror" ]; then
  echo "pgvector: no Debian mirror found in ${sources}" >&2
  exit 1
fi

cat > /etc/apt/sources.list.d/parley-pgvector-src.sources <<EOF
Types: deb-src
URIs: ${mirror}
Suites: trixie
Components: main
Signed-By: ${keyring:-/usr/share/keyrings/debian-archive-keyring.gpg}
EOF

apt-get update -qq
apt-get install -y -qq "postgresql-server-dev-${pg_version}" dpkg-dev make gcc >/dev/null

workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"
apt-get source -qq --download-only pgvector
dpkg-source -x --no-check pgvector_*.dsc src >/dev/null
cd src
make -s PG_CONFIG="/usr/lib/postgresql/${pg_version}/bin/pg_config" >/dev/null
make -s install PG_CONFIG="/usr/lib/postgresql/${pg_version}/bin/pg_config" >/dev/null
echo "pgvector: installed $(awk -F"'" '/default_version/ { print $2 }' vector.control) for PostgreSQL ${pg_version}"
