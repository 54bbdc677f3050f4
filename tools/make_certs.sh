#!/usr/bin/env bash
# Makes a small PKI for trying TLS and mutual TLS on one machine (not for
# production: the keys are unencrypted and the CA is throwaway):
#
#   tools/make_certs.sh DIR [DAYS]
#
# DIR/ca.crt, ca.key          a CA (CN=ptoserve-ca)
# DIR/server.crt, server.key  the server's, signed by the CA, for localhost
#                             and 127.0.0.1 (CN=localhost)
# DIR/client.crt, client.key  a client's, signed by the CA (CN=client)
# DIR/other-ca.crt, .key      a second CA that signed nothing: what a
#                             client that trusts the wrong CA holds
# Keys are P-256. DAYS (default 30) is how long the certificates last.
set -euo pipefail
if (($# < 1 || $# > 2)); then
  echo "usage: tools/make_certs.sh DIR [DAYS]" >&2
  exit 2
fi
dir=$1
days=${2:-30}
command -v openssl >/dev/null || {
  echo "make_certs: openssl is missing (apt-get install openssl)" >&2
  exit 1
}
mkdir -p "$dir"
cd "$dir"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
quiet() { "$@" 2>/dev/null >/dev/null || { "$@"; exit 1; }; }
quiet openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days "$days" \
  -subj /CN=ptoserve-ca
quiet openssl req -x509 "${ec[@]}" -keyout other-ca.key -out other-ca.crt \
  -days "$days" -subj /CN=other-ca
quiet openssl req "${ec[@]}" -keyout server.key -out server.csr -subj /CN=localhost
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
quiet openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key \
  -CAcreateserial -out server.crt -days "$days" -extfile server.ext
quiet openssl req "${ec[@]}" -keyout client.key -out client.csr -subj /CN=client
quiet openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key \
  -CAcreateserial -out client.crt -days "$days"
rm -f server.csr server.ext client.csr ca.srl
chmod 600 ./*.key
echo "make_certs: ca.crt, server.crt/.key, client.crt/.key, other-ca.crt in $PWD"
