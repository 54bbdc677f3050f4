#!/bin/sh
echo "coverage is not supported in the offline ptoserve build" >&2
exit 1
