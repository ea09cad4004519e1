# Turns `go test -bench` output into `BENCH <name> <value> <unit>` lines. A benchmark reports a figure with
# b.ReportMetric(value, "<name>:<unit>"); the standard ns/op, B/op and allocs/op columns are left out.
/^Benchmark/ {
	for (i = 3; i + 1 <= NF; i += 2) {
		n = split($(i + 1), parts, ":")
		if (n == 2) printf "BENCH %s %s %s\n", parts[1], $i, parts[2]
	}
	next
}
/^(FAIL|panic:|--- FAIL)/ { print; failed = 1 }
END { exit failed }
