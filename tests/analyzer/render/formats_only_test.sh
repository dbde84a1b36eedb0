#!/usr/bin/env bash
# Renderers only format (docs/design.md, "Renderers"): every number
# analyzer/render/ prints comes from a model (analyzer/model/ or
# analyzer/simulate/), computed there once. Checked on the C++ sources of
# analyzer/render/ with comments, string and character literals and
# preprocessor lines blanked out, by three rules:
#
# 1. No call of a model function that computes a figure from a count the
#    caller picks (Share, the estimators of estimate.h, Analysis::Scaled,
#    Count, Rate, PerThousand, PerUnit, ...), nor of the functions that
#    build a model (ComputeDiff, DiffCentral, CpuFiguresOf, SizeMap).
#    Renderers read Analysis::Figures/Totals and the result structs instead.
# 2. No *, / or % (nor *=, /=, %=) at all, except on the lines ALLOWED
#    names below: the unit conversions of output.cc (digit groups, bytes,
#    durations, seconds, a share as a percentage) and the pixel geometry of
#    html.cc's lifetime bars. Banning the operators outright, not only on
#    model fields, keeps a renderer-local helper from hiding a product or a
#    quotient behind plain parameters.
# 3. No +, -, +=, -=, ++ or -- with an operand that is a number a model
#    holds: a member access (x.name, p->name, x.name[i]) of a numeric field,
#    or a call of a numeric accessor (x.Allocations()), declared in
#    analyzer/pairing/, model/ or simulate/ headers (the names are read
#    from them, so a new field is covered without editing this test).
#
# What it cannot see: + and - between plain locals or parameters (string
# concatenation and column layout use them everywhere), so a count copied
# into a local and then added to another passes rule 3; and
# report_page.js, the HTML page's script, which still computes the
# summary's shares and rates, the size-class percentages and the heat map's
# sums in the browser from the page's model. Review covers those.
#
# The rules are first run on lines they must flag and lines they must pass,
# so a regular expression that stopped matching fails the test.
# Usage: formats_only_test.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 1

# Blank what is not code, keeping line numbers.
code_of() {
  sed -E "s/^[[:space:]]*#.*//; s/'([^'\\\\]|\\\\.)+'/'x'/g; s/\"([^\"\\\\]|\\\\.)*\"/\"\"/g; s://.*$::" "$1"
}

# The numeric fields and accessors the models declare.
model_headers=(analyzer/pairing/*.h analyzer/model/*.h analyzer/simulate/*.h)
number_type='(const[[:space:]]+)?(u?int(8|16|32|64)_t|size_t|double|float|int|unsigned|long|SampledCount|Estimate|std::array<u?int64_t,[^>]*>|std::vector<u?int64_t>|std::map<[^>]*,[[:space:]]*(u?int64_t|double)>)'
fields=$(grep -hoE "^[[:space:]]+${number_type}[[:space:]]+[a-z_][a-z0-9_]*(\[[^]]*\])?[[:space:]]*(=[^;,]*|\{[^}]*\})?[;,]" \
           "${model_headers[@]}" |
         sed -E 's/\[[^]]*\]//; s/[[:space:]]*(=[^;,]*|\{[^}]*\})?[;,]$//; s/.*[[:space:]]//' | sort -u | paste -sd'|')
accessors=$(grep -hoE "^[[:space:]]+(u?int(32|64)_t|size_t|double|Estimate)[[:space:]]+[A-Z][A-Za-z0-9]*\([^)]*\)[[:space:]]*const" \
              "${model_headers[@]}" |
            sed -E 's/\(.*//; s/.*[[:space:]]//' | sort -u | paste -sd'|')
if [[ -z $fields || -z $accessors ]]; then
  echo "FAIL: read no numeric fields or accessors from the model headers"
  exit 1
fi

helpers='\b(Share|ScaleCount|EstimateCount|EstimateBytes|EstimateDifference|Bounded|GarwoodInterval|PoissonUpperTail|ComputeDiff|DiffCentral|CpuFiguresOf|SizeMap)\b|(\.|->)(Scaled|Count|FreeCount|AllocCount|Bytes|Net|Rate|PerThousand|PerUnit|Units)\('
products='(^|[^[:space:]])[[:space:]]+[*/%]=?([[:space:]]|$)|[]A-Za-z0-9_)][*/%][A-Za-z0-9_(]'
member="(\\.|->)((${fields})(\\[[^]]*\\])*|(${accessors})\\([^()]*\\))"
sum_op='(\+\+|--|\+=?|-=|-[^>=-])'
path_to='[A-Za-z_][A-Za-z0-9_]*((\.|->)[A-Za-z_][A-Za-z0-9_]*|\[[^]]*\]|\([^()]*\))*'
sums="${member}[[:space:]]*${sum_op}|(\\+\\+|--|[-+]=?)[[:space:]]*${path_to}${member}([^A-Za-z0-9_(.-]|-[^>]|$)"

# Lines rule 2 allows, as FILE:TEXT (TEXT a fixed part of the code line).
# Each must still match a line, so the list cannot outlive its reasons.
ALLOWED=(
  'analyzer/render/output.cc:(digits.size() - i) % 3'              # Commas: groups of 3 digits
  'analyzer/render/output.cc:100.0 * share'                        # PercentText
  'analyzer/render/output.cc:return ns / 1e9'                      # Seconds
  'analyzer/render/output.cc:v /= 1024'                            # HumanBytes
  'analyzer/render/output.cc:static_cast<double>(ns) / 1000'       # DurationText
  'analyzer/render/output.cc:v /= 1000'                            # DurationText
  'analyzer/render/output.cc:bytes % 1024 == 0'                    # SizeClassLabel: "1 KiB"
  'analyzer/render/html.cc:int width = static_cast<int>(l.octaves.size()) * (kBar + kGap)'  # LifetimeSvg: pixels
  'analyzer/render/html.cc:static_cast<double>(l.octaves[i]) * kHeight /'                  # bar height, pixels
  'analyzer/render/html.cc:static_cast<int>(i) * (kBar + kGap)'                            # bar x, pixels
)

# scan FILE...: one "FILE:LINE: rule N: code" per offence.
scan() {
  local file line text
  for file in "$@"; do
    while IFS=: read -r line text; do
      echo "$file:$line: rule 1 (a model computation called): ${text#"${text%%[! ]*}"}"
    done < <(code_of "$file" | grep -nE "$helpers")
    while IFS=: read -r line text; do
      local allowed=0 entry
      for entry in "${ALLOWED[@]}"; do
        [[ ${entry%%:*} == "$file" && $text == *"${entry#*:}"* ]] && allowed=1
      done
      ((allowed)) || echo "$file:$line: rule 2 (*, / or %): ${text#"${text%%[! ]*}"}"
    done < <(code_of "$file" | grep -nE "$products")
    while IFS=: read -r line text; do
      echo "$file:$line: rule 3 (+ or - on a model number): ${text#"${text%%[! ]*}"}"
    done < <(code_of "$file" | grep -nE "$sums")
  done
}

failures=0
# The rules on lines they must flag, and on lines they must pass.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
cat >"$probe/flag.cc" <<'EOF'
  double s = Share(c.cross_thread, c.frees);
  out += Commas(before.Scaled(r.before_steady));
  fmt::format("{:.1f}", a.Rate(p.count.sampled).value);
  double pct = 100.0 * f.share;
  return allocs ? n * 1000.0 / allocs : 0.0;
  double x = f.frees/t;
  v %= 7;
  row("same-thread", c.paired - c.cross_thread, "");
  uint64_t known = p.cpu.same + p.cpu.other;
  threads += g.threads;
  out += Commas(f->cpu.known + 1);
  Commas(a.Frees() - 1);
  total += m.groups[i].allocations;
  ++counts.release_calls_by_cause[0];
EOF
cat >"$probe/pass.cc" <<'EOF'
  out += "a" + Fit(p.alloc_role, 20) + " -> " + t.path;   // 100.0 * x in a comment
  const PairCostFigures* f = a.pair_costs->Find(p.key);
  fmt::format("{:.1f}% of frees, {} / {}", PercentText(t.cross_thread_share, 1), i + 1, shown);
  out += fmt::format("  ... and {} more\n", r.new_within_noise.size() - shown);
  for (const CrossPair* p : g.pairs) out += SiteText(p->free_site, "  at ", 4, Width());
  const Estimate &n = f.count, &bytes = f.bytes;
EOF
flagged=$(scan "$probe/flag.cc" | wc -l)
expected=$(grep -c . "$probe/flag.cc")
if ((flagged < expected)) || [[ -n $(scan "$probe/flag.cc" | cut -d: -f2 | sort -u |
                                     comm -13 - <(seq 1 "$expected" | sort)) ]]; then
  echo "FAIL: the rules flag $flagged offence(s) on $expected lines that each have one:"
  scan "$probe/flag.cc"
  failures=$((failures + 1))
fi
if [[ -n $(scan "$probe/pass.cc") ]]; then
  echo "FAIL: the rules flag lines that do no arithmetic on model numbers:"
  scan "$probe/pass.cc"
  failures=$((failures + 1))
fi

sources=(analyzer/render/*.cc analyzer/render/*.h)
offences=$(scan "${sources[@]}")
if [[ -n $offences ]]; then
  echo "FAIL: renderers compute (move the figure into the model):"
  echo "$offences"
  failures=$((failures + 1))
fi
for entry in "${ALLOWED[@]}"; do
  if [[ -z $(code_of "${entry%%:*}" | grep -F -- "${entry#*:}") ]]; then
    echo "FAIL: ALLOWED entry matches no line any more: $entry"
    failures=$((failures + 1))
  fi
done

if ((failures > 0)); then exit 1; fi
echo "renderers only format: ${#sources[@]} files, no arithmetic on model numbers"
