#!/bin/sh
# Runs manifests_test.py with Debian's python3 (it has python3-yaml).
exec /usr/bin/python3 tests/deploy/manifests_test.py server/ptoserve deploy
