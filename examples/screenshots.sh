#!/usr/bin/env bash
# Regenerates docs/images/compare-report.png, the README's picture of the
# walkthrough's comparison report (`make screenshots`). Runs the walkthrough,
# then Debian's headless chromium, with the network off and a fresh profile.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || { echo "screenshots: needs Debian's chromium package" >&2; exit 2; }
bash examples/demo.sh > /dev/null
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --disable-extensions --host-resolver-rules="MAP * ~NOTFOUND" --hide-scrollbars \
  --user-data-dir="$profile" --window-size=1280,1380 \
  --screenshot="$PWD/docs/images/compare-report.png" \
  "file://$PWD/demo-out/compare/report.html" 2> "$profile/chromium.log"
echo "wrote docs/images/compare-report.png"
