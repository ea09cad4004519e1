package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/clinksql/clinksql/exec"
)

// WriteJSON writes r as one JSON document.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes r for people.
func WriteTable(w io.Writer, r *Report) error {
	p := &printer{w: w}
	if r.Catalog != "" {
		p.f("catalog unreadable: %s\n", r.Catalog)
	}
	if r.Job == nil {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tSTATE\tCHECKPOINTS\tSTATEMENT")
		for _, j := range r.Jobs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", j.ID, j.State, idsText(j.Completed), oneLine(j.Statement))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(r.Jobs) == 0 {
			p.f("no jobs in %s\n", r.DataDir)
		}
		return p.err
	}
	j := r.Job
	p.f("job %s (%s)\n", j.ID, j.State)
	if j.Statement != "" {
		p.f("  statement: %s\n", oneLine(j.Statement))
	}
	if j.PlanError != "" {
		p.f("  values shown as hex: the job's statement does not plan: %s\n", j.PlanError)
	}
	p.f("  high-water checkpoint id: %d\n\nCHECKPOINTS\n", j.HighWater)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tSTATUS\tCONFIRMED\tFILES\tBYTES\tMODE\tTRIGGERED\tDURATION")
	for _, c := range j.Checkpoints {
		mode, trigger, duration := c.Mode, "", ""
		if c.Trigger != nil {
			trigger = c.Trigger.UTC().Format("2006-01-02 15:04:05.000")
		}
		if c.DurationMs != nil {
			duration = fmt.Sprintf("%.1f ms", *c.DurationMs)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%t\t%d\t%d\t%s\t%s\t%s\n", c.ID, c.Status, c.Confirmed, len(c.Files), c.Bytes, mode, trigger, duration)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if j.Checkpoint == nil {
		p.f("\nno completed checkpoint\n")
		return p.err
	}
	c := j.Checkpoint
	p.f("\nCHECKPOINT %d (marker %s)\n", c.ID, c.Marker)
	for _, st := range c.Subtasks {
		p.subtask(st)
	}
	if len(j.Receipts) > 0 {
		p.f("\nCOMMIT RECEIPTS\n")
		for _, rc := range j.Receipts {
			p.f("  %s subtask %d: receipts %s", rc.Operator, rc.Subtask, idsText(rc.Receipts))
			if len(rc.Unresolved) > 0 {
				p.f("; unresolved %s", idsText(rc.Unresolved))
			}
			p.f("\n")
		}
	}
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (p *printer) subtask(st Subtask) {
	kind := "small state"
	if st.Keyed {
		kind = "keyed state"
	}
	label := ""
	if st.Label != "" {
		label = " " + st.Label
	}
	p.f("\n%s (operator %s, subtask %d%s): %s, %d bytes, %s\n", st.Participant, st.Operator, st.Subtask, label, kind, st.Bytes, st.File)
	if st.KeyGroups != nil {
		p.f("  key groups [%d, %d)\n", st.KeyGroups[0], st.KeyGroups[1])
	}
	if s := st.Source; s != nil {
		p.f("  source offset: %s (%d bytes)\n", s.Offset.Hex, s.Offset.Len)
		if len(s.Position) > 0 {
			p.f("  source position: %s\n", fieldsText(s.Position))
		}
		if s.DecodeError != "" {
			p.f("  source position not decoded: %s\n", s.DecodeError)
		}
		p.f("  source watermark: %s\n", wmText(s.Watermark))
	}
	if c := st.Counts; c != nil {
		p.f("  counts: rows in %d, rows %d, late rows %d, bad values %d\n", c.RowsIn, c.Rows, c.LateRows, c.BadValues)
	}
	if iw := st.InputWatermarks; iw != nil {
		ins := make([]string, len(iw.Inputs))
		for i, w := range iw.Inputs {
			ins[i] = wmText(w)
		}
		p.f("  input watermark: %s (inputs: %s)\n", wmText(iw.Combined), strings.Join(ins, ", "))
	}
	for _, e := range st.OperatorState {
		if e.Watermark != nil {
			p.f("  %s: %s\n", e.Name, wmText(*e.Watermark))
		} else {
			p.f("  %s: %s (%d bytes)\n", e.Name, e.Value.Hex, e.Value.Len)
		}
	}
	if st.Keyed || st.KeyedEntries > 0 {
		p.f("  keyed state: %d entries\n", st.KeyedEntries)
	}
	for _, kg := range st.KeyedState {
		p.f("    key group %d\n", kg.KeyGroup)
		for _, e := range kg.Entries {
			if e.RawKey != nil {
				p.f("      state %d key %s (%d bytes) = %s (%d bytes)", e.StateID, e.RawKey.Hex, e.RawKey.Len, e.RawValue.Hex, e.RawValue.Len)
				if e.Error != "" {
					p.f(" [not decoded: %s]", e.Error)
				}
				p.f("\n")
				continue
			}
			p.f("      %s %s: %s\n", e.Kind, fieldsText(e.Key), fieldsText(e.Value))
		}
	}
	for _, t := range st.Timers {
		p.f("  timer: key group %d at %s, key %s\n", t.KeyGroup, wmText(t.Timestamp), t.Key.Hex)
	}
	if in := st.Inflight; in != nil {
		p.f("  in-flight records (unaligned): %s, %d bytes\n", in.File, in.Bytes)
		for _, c := range in.Channels {
			p.f("    input channel %d: %d rows\n", c.Input, c.Rows)
			for _, r := range c.Elements {
				if r.Watermark != nil {
					p.f("      watermark %s\n", wmText(*r.Watermark))
					continue
				}
				p.f("      batch (%s)\n", strings.Join(r.Columns, ", "))
				for i, row := range r.Rows {
					kind := "+I"
					if i < len(r.Kinds) {
						kind = r.Kinds[i]
					}
					p.f("        %s %s\n", kind, rowText(row))
				}
			}
		}
	}
	if h := st.Handle; h != nil {
		if h.Text != "" {
			p.f("  staged handle: %s (%d bytes), horizon %s, %s\n", h.Text, h.Handle.Len, wmText(h.Horizon), h.File)
		} else {
			p.f("  staged handle: %s (%d bytes), horizon %s, %s\n", h.Handle.Hex, h.Handle.Len, wmText(h.Horizon), h.File)
		}
	}
	for _, t := range st.Transactions {
		p.f("  transaction of checkpoint %d: %s %s (%d bytes)\n", t.Checkpoint, t.State, t.File, t.Bytes)
	}
}

func wmText(w Watermark) string {
	if w.Micros == exec.MinWatermark || w.Micros == exec.MaxWatermark {
		return w.Text
	}
	return w.Text + " (" + strconv.FormatInt(w.Micros, 10) + " us)"
}

func fieldsText(fs []exec.StateField) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		v := "NULL"
		if f.Value != nil {
			v = *f.Value
		}
		s[i] = f.Name + "=" + v
	}
	return strings.Join(s, " ")
}

func rowText(row []*string) string {
	s := make([]string, len(row))
	for i, v := range row {
		if v == nil {
			s[i] = "NULL"
		} else {
			s[i] = *v
		}
	}
	return strings.Join(s, " | ")
}
