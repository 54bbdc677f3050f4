#!/bin/sh
# Runs manifests_test.py with Debian's python3 (it has python3-yaml and
# python3-kubernetes); kubectl is the one tools/setup.sh unpacks.
exec /usr/bin/python3 tests/deploy/manifests_test.py server/ptoserve client/ptoctl/ptoctl deploy
