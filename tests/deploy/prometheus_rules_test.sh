#!/bin/sh
# deploy/prometheus/rules.yml as Prometheus loads it (promtool check rules)
# and as its unit tests say it behaves (promtool test rules).
set -eu
cd deploy/prometheus
/usr/bin/promtool check rules rules.yml
/usr/bin/promtool test rules rules_test.yml
