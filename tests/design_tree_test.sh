#!/usr/bin/env bash
# docs/design.md's tree ("## The tree") names exactly the repository's
# folders: the top-level ones, and one level down in analyzer/ and bench/,
# the folders whose rooms the tree draws. A folder added, moved or removed
# without the tree following fails here. Build trees (build*/) and hidden
# folders are not the project's.
# Usage: design_tree_test.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 1
tree=$(awk '/^## The tree/{on=1} on && /^```$/{n++; if (n == 2) exit; next} on && n == 1' \
       docs/design.md)
[[ -n $tree ]] || { echo "FAIL: no tree block under '## The tree' in docs/design.md"; exit 1; }
# Folders the tree names: "name/" at the start of a line (top level) or
# after two spaces (one level down, under the last top-level folder).
documented=$(awk '
  /^[a-z][a-z._-]*\// {top = $1; print top; next}
  /^  [a-z][a-z._-]*\// {print top $1}' <<<"$tree" | sort)
actual=$( { for d in */; do [[ $d == build*/ ]] || echo "$d"; done
            for parent in analyzer bench; do
              for d in "$parent"/*/; do echo "$d"; done
            done; } | sort)
if [[ $documented != "$actual" ]]; then
  echo "FAIL: docs/design.md's tree and the folders differ (< tree, > folders):"
  diff <(echo "$documented") <(echo "$actual")
  exit 1
fi
echo "design.md's tree names the $(wc -l <<<"$actual") folders there are"
