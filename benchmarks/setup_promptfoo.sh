#!/bin/sh
# Install promptfoo 0.121.x (the last line that runs on Node 20; 0.122 needs
# Node >= 22) into benchmarks/.promptfoo. Idempotent: does nothing when the
# right version is already there. The npm cache is kept inside .promptfoo (and
# removed afterwards) so the install writes nothing into the home directory.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix="$here/.promptfoo"
want="0.121"
bin="$prefix/node_modules/.bin/promptfoo"
pkg="$prefix/node_modules/promptfoo/package.json"

if [ -x "$bin" ] && [ -f "$pkg" ] &&
   node -e "process.exit(require('$pkg').version.startsWith('$want.') ? 0 : 1)"; then
    echo "promptfoo $(node -p "require('$pkg').version") already in $prefix"
    exit 0
fi

command -v npm >/dev/null || { echo "npm is required (Node >= 20.20)" >&2; exit 1; }
mkdir -p "$prefix"
[ -f "$prefix/package.json" ] || echo '{"private": true}' > "$prefix/package.json"
npm_config_cache="$prefix/.npm-cache" npm install --prefix "$prefix" \
    --no-audit --no-fund --loglevel=error "promptfoo@~$want.0"
rm -rf "$prefix/.npm-cache"
echo "promptfoo $(node -p "require('$pkg').version") installed in $prefix"
