package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clinksql/clinksql/tests/kafkatest"
)

// The -kafka mode: the queries read the nexmark events from Kafka topics.
//
//  1. A kfake broker process (tests/kafkatest.Launch) with the topics person, auction and bid, one partition each.
//  2. One `clinksql exec --wait` process loads them: the tables of bench/nexmark/ddl_*.sql (the nexmark connector,
//     events.num = -events) inserted into at-least-once Kafka sinks (format json), so the topics hold exactly
//     the generator's events, each table its share. The topics' end offsets must add up to -events.
//  3. Per query one `clinksql exec --wait` process whose DDL is ddl_*.sql with the nexmark connector replaced by
//     Kafka (format json, earliest to latest offset: a bounded job), the same columns and WATERMARK clauses,
//     checkpoints every 10 s (aligned), blackhole sinks, parallelism 1. Its CPU time (user + sys of that process
//     only: not the loading, not the broker) divides the events.

// kafkaTables are the topics, one per table.
var kafkaTables = []string{"person", "auction", "bid"}

// nexmarkWith is the WITH clause of a ddl_*.sql table.
var nexmarkWith = regexp.MustCompile(`(?s)WITH \(connector = 'nexmark', 'nexmark\.table\.type' = '(\w+)'[^;]*\)`)

// streamColumns are the columns of a ddl_*.sql table, up to its WATERMARK clause.
var streamColumns = regexp.MustCompile(`(?s)CREATE STREAM (\w+) \((.*?),\s*WATERMARK`)

type kafkaResult struct {
	result
	read int64 // the rows of the topics the query reads
}

func runKafka(bin, dir string, queries []string, events int64, parallelism int, table string) error {
	defer kafkatest.RemoveBinary()
	topics := map[string]int32{}
	for _, t := range kafkaTables {
		topics[t] = 1
	}
	c, err := kafkatest.Launch(kafkatest.Options{Topics: topics})
	if err != nil {
		return err
	}
	defer c.Kill()
	bootstrap := c.Bootstrap()

	// Load the topics.
	var load strings.Builder
	load.WriteString("SET checkpoint.interval = '10s';\n")
	for _, t := range kafkaTables {
		ddl, err := os.ReadFile(fmt.Sprintf("%s/ddl_%s.sql", dir, t))
		if err != nil {
			return err
		}
		m := streamColumns.FindStringSubmatch(string(ddl))
		if m == nil || m[1] != t {
			return fmt.Errorf("ddl_%s.sql: no CREATE STREAM %s (columns, WATERMARK ...)", t, t)
		}
		load.Write(ddl)
		fmt.Fprintf(&load, "CREATE SINK kafka_%s (%s) WITH (connector = 'kafka', topic = '%s', "+
			"'properties.bootstrap.servers' = '%s', format = 'json', 'sink.delivery-guarantee' = 'at-least-once');\n",
			t, m[2], t, bootstrap)
		fmt.Fprintf(&load, "INSERT INTO kafka_%s SELECT * FROM %s;\n", t, t)
	}
	sql := strings.ReplaceAll(load.String(), "${EVENTS}", strconv.FormatInt(events, 10))
	lr := run(bin, "load", sql)
	if lr.failed != "" {
		return fmt.Errorf("loading the topics: %s", lr.failed)
	}
	rows, err := topicRows(c)
	if err != nil {
		return err
	}
	var total int64
	for _, n := range rows {
		total += n
	}
	if total != events {
		return fmt.Errorf("the topics hold %d records (%v), want %d events", total, rows, events)
	}
	fmt.Printf("loaded %d events (person %d, auction %d, bid %d) in %.1f s wall, %.1f CPU-s\n",
		total, rows["person"], rows["auction"], rows["bid"], lr.wall.Seconds(), lr.cpu.Seconds())

	toKafka := func(ddl string) string {
		return nexmarkWith.ReplaceAllString(ddl, "WITH (connector = 'kafka', topic = '$1', 'properties.bootstrap.servers' = '"+
			bootstrap+"', format = 'json', 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset')")
	}
	var results []kafkaResult
	failed := false
	for _, q := range queries {
		r := kafkaResult{result: runQuery(bin, dir, q, events, parallelism, toKafka)}
		if tables, _, err := uses(dir, q); err == nil {
			for _, t := range tables {
				r.read += rows[t]
			}
		}
		results = append(results, r)
		if r.failed != "" {
			failed = true
			fmt.Printf("FAIL kafka %s: %s\n", q, r.failed)
			continue
		}
		fmt.Printf("BENCH nexmark_kafka_%s_events_per_cpu_second %.0f ev/s\n", q, perSecond(r.events, r.cpu))
		fmt.Printf("BENCH nexmark_kafka_%s_events_per_second %.0f ev/s\n", q, perSecond(r.events, r.wall))
		fmt.Printf("BENCH nexmark_kafka_%s_p%d_events_per_cpu_second %.0f ev/s\n", q, parallelism, perSecond(r.events, r.cpu))
		fmt.Printf("BENCH nexmark_kafka_%s_p%d_events_per_second %.0f ev/s\n", q, parallelism, perSecond(r.events, r.wall))
	}
	rss, hwm := procMemory(c.Pid())
	fmt.Printf("kfake: %s resident, %s at most\n", rss, hwm)
	if table != "" {
		if err := writeSection(table, "kafka", kafkaTable(results, events, rows, lr, hwm)); err != nil {
			return err
		}
	}
	if failed {
		os.Exit(1)
	}
	return nil
}

// topicRows are the records of each topic (its end offset: the sinks wrote no transactions).
func topicRows(c *kafkatest.Cluster) (map[string]int64, error) {
	opts, err := c.ClientOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, kafkaTables...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing the topics' end offsets: %w", err)
	}
	rows := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) { rows[o.Topic] += o.Offset })
	return rows, nil
}

// procMemory is a process's resident memory now and at its peak (VmRSS, VmHWM).
func procMemory(pid int) (rss, hwm string) {
	rss, hwm = "?", "?"
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		v = strings.TrimSpace(v)
		if kb, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64); err == nil {
			v = fmt.Sprintf("%.0f MiB", float64(kb)/1024)
		}
		switch k {
		case "VmRSS":
			rss = v
		case "VmHWM":
			hwm = v
		}
	}
	return
}

// kafkaTable is the section "Nexmark from Kafka".
func kafkaTable(results []kafkaResult, events int64, rows map[string]int64, load result, kfakeMem string) string {
	commit, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	var sb strings.Builder
	sb.WriteString("## Nexmark from Kafka\n\n")
	sb.WriteString("Written by `make bench-kafka` (scripts/nexmark-bench -kafka).\n\n")
	fmt.Fprintf(&sb, "Measured at commit %s on %s with EVENTS=%d (`make bench-kafka` defaults to 1M): the events (person %d, auction %d, bid %d), loaded once into three "+
		"one-partition topics of a kfake broker process (franz-go's fake Kafka, which holds everything in memory: "+
		"%s resident at most) by one `clinksql exec --wait` process inserting the nexmark connector's tables into "+
		"at-least-once Kafka sinks as JSON (%.1f s wall, %.1f CPU-seconds, not counted below). Then per query one "+
		"`clinksql exec --wait` process whose tables are the same streams declared as Kafka sources (format json, "+
		"earliest to latest offset, read_committed, the same WATERMARK clauses as bench/nexmark/ddl_*.sql), "+
		"checkpoints every 10 s (aligned), blackhole sinks, parallelism 1, on a 2-core machine shared with the "+
		"broker process and other work (runs a few minutes apart have differed by up to a fifth).\n\n",
		strings.TrimSpace(string(commit)), time.Now().UTC().Format("2006-01-02"), events,
		rows["person"], rows["auction"], rows["bid"], kfakeMem, load.wall.Seconds(), load.cpu.Seconds())
	sb.WriteString("Counted as in the datagen runs above: **all events** (all three types, " + strconv.FormatInt(events, 10) +
		") divided by the user + sys CPU seconds of the query's process (the broker's CPU is not counted). A query " +
		"reads only the topics of the tables it uses (\"rows read\": the bid-only queries the bid topic, q8 the person and auction topics), so " +
		"for q8 the figure counts events it never reads, as the datagen figure does; the last column divides the " +
		"rows actually read instead.\n\n")
	sb.WriteString("| query | clinksql ev/CPU-s | clinksql ev/s (wall) | rows read | rows read/CPU-s | RisingWave [C] (Kafka source) |\n")
	sb.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range results {
		ours, wall, perRead := "fails: "+r.failed, "-", "-"
		if r.failed == "" {
			ours, wall, perRead = human(perSecond(r.events, r.cpu)), human(perSecond(r.events, r.wall)), human(perSecond(r.read, r.cpu))
		}
		rw := "-"
		if p, ok := published[r.query]; ok {
			rw = p[3]
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %d | %s | %s |\n", r.query, ours, wall, r.read, perRead, rw)
	}
	sb.WriteString("\n[C] as above: RisingWave's published figures, one 8 vCPU node reading Kafka, divided by 8.\n")
	return sb.String()
}
