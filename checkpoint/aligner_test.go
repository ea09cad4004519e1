package checkpoint

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata expectations with the actual output")

// TestAligner runs the script testdata/aligner.txt: blocks of `command args`, `----`, expected output, separated
// by blank lines (the datadriven shape; regenerate with go test ./checkpoint -run TestAligner -rewrite).
//
//	new inputs=N [unalign=false] [override=aligned|unaligned]   a fresh Aligner
//	barrier in=I id=N [mode=unaligned] [terminal]                deliver a barrier
//	close in=I                                                   close an input
//	tick D                                                       advance the fake clock
//	pending id=N                                                 PendingInputs(N)
//
// Every command prints the advances it produced, then the paused inputs and what each input owes to open
// unaligned checkpoints (PendingUnaligned).
func TestAligner(t *testing.T) {
	const path = "testdata/aligner.txt"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		a     *Aligner
		now   = time.Unix(0, 0)
		out   strings.Builder // the rewritten file
		lines = strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	)
	clock := func() time.Time { return now }
	for i := 0; i < len(lines); {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			i++
			continue
		}
		cmdLine := line
		pos := i + 1
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: %q must be followed by ----", path, i+1, cmdLine)
		}
		i += 2
		var want []string
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			want = append(want, lines[i])
			i++
		}

		fields := strings.Fields(cmdLine)
		args := map[string]string{}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			args[k] = v
		}
		num := func(k string) int {
			n, err := strconv.Atoi(args[k])
			if err != nil {
				t.Fatalf("%s:%d: %s: bad %s=%q", path, pos, cmdLine, k, args[k])
			}
			return n
		}
		var got []string
		switch fields[0] {
		case "new":
			a = NewAligner(num("inputs"), args["unalign"] != "false")
			a.SetClock(clock)
			if o, ok := args["override"]; ok {
				m, err := ParseMode(o)
				if err != nil {
					t.Fatal(err)
				}
				a.SetOverride(m)
			}
		case "barrier":
			b := Barrier{ID: uint64(num("id"))}
			if args["mode"] == "unaligned" {
				b.Mode = Unaligned
			}
			_, b.Terminal = args["terminal"]
			got = append(got, fmtAdvance(a.OnBarrier(num("in"), b)))
		case "close":
			advs := a.OnInputClosed(num("in"))
			if len(advs) == 0 {
				got = append(got, "no advance")
			}
			for _, adv := range advs {
				got = append(got, fmtAdvance(adv))
			}
		case "tick":
			d, err := time.ParseDuration(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			now = now.Add(d)
		case "pending":
			got = append(got, fmt.Sprint(a.PendingInputs(uint64(num("id")))))
		default:
			t.Fatalf("%s:%d: unknown command %q", path, pos, fields[0])
		}
		got = append(got, fmtAlignerState(a))

		out.WriteString(cmdLine + "\n----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		if !*rewrite && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, pos, cmdLine, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func fmtAdvance(a Advance) string {
	if a.Barrier.ID == 0 {
		return "ignored"
	}
	s := a.Barrier.String()
	flags := 0
	add := func(f string) { s += " " + f; flags++ }
	if a.Forward {
		add("forward")
	}
	if a.UnalignedFirst {
		add("unaligned-first")
	}
	if a.Complete {
		add("complete wait=" + a.AlignWait.String())
	}
	if flags == 0 {
		s += " held"
	}
	return s
}

func fmtAlignerState(a *Aligner) string {
	var paused []int
	var owes []string
	for i := range a.closed {
		if a.Paused(i) {
			paused = append(paused, i)
		}
		if ids := a.PendingUnaligned(i); len(ids) > 0 {
			owes = append(owes, fmt.Sprintf("%d:%v", i, ids))
		}
	}
	s := fmt.Sprintf("paused=%v", paused)
	if len(owes) > 0 {
		s += " owes " + strings.Join(owes, " ")
	}
	return s
}
