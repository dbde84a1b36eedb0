# Helpers shared by the benchmark scripts (sourced, not run).

# Median of the numbers on stdin, one a line (the mean of the two middle
# ones for an even count). `median [EMPTY]`: what to print when there are
# none, 0 unless given (a caller that divides by it passes nan).
median() {
  sort -g | awk -v empty="${1:-0}" '{v[NR] = $1} END {
    if (NR == 0) print empty
    else if (NR % 2) print v[(NR + 1) / 2]
    else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# "LOW-HIGH" of the numbers on stdin, one a line, with two decimals: the
# fastest and slowest of a configuration's rounds beside its median.
# "-" when there are none.
spread() {
  sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {
    if (NR == 0) print "-"
    else printf "%.2f-%.2f\n", lo, hi }'
}

# Wall clock in nanoseconds.
now_ns() { date +%s%N; }
