package kafkatest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMain(m *testing.M) { Main(m) }

func rec(topic string, p int32, v string) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}
}

func values(rs []*kgo.Record) string {
	var b []string
	for _, r := range rs {
		b = append(b, fmt.Sprintf("%d:%s", r.Partition, r.Value))
	}
	return strings.Join(b, " ")
}

// The harness end to end: two brokers behind SCRAM, a seeded topic, plain and transactional produces, and a
// read_committed read that sees the plain and committed records and not the aborted ones.
func TestHarnessSmoke(t *testing.T) {
	c := Start(t, Options{Brokers: 2, Topics: map[string]int32{"seeded": 2},
		Users: []User{{"SCRAM-SHA-256", "alice", "secret"}}})
	if len(c.Addrs) != 2 {
		t.Fatalf("addresses %q, want two brokers", c.Addrs)
	}
	c.CreateTopic(t, "made", 3)
	c.Produce(t, rec("seeded", 0, "a"), rec("seeded", 1, "b"), rec("made", 2, "c"))
	c.ProduceTxn(t, "tx", true, rec("seeded", 0, "committed"), rec("made", 0, "committed"))
	c.ProduceTxn(t, "tx", false, rec("seeded", 1, "aborted"))
	c.Produce(t, rec("seeded", 1, "after"))
	if got, want := values(c.ConsumeAll(t, "seeded", "made")), "0:a 0:committed 1:b 1:after 0:committed 2:c"; got != want {
		t.Fatalf("consumed %q, want %q", got, want)
	}
	c.AddPartitions(t, "made", 2)
	c.Produce(t, rec("made", 4, "new"))
	if got, want := values(c.ConsumeAll(t, "made")), "0:committed 2:c 4:new"; got != want {
		t.Fatalf("after growing: consumed %q, want %q", got, want)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
}

// A wrong SASL password is refused: the cluster really authenticates. kfake closes the connection (EOF) where a
// real broker answers SASL_AUTHENTICATION_FAILED.
func TestHarnessSASLRefusesWrongPassword(t *testing.T) {
	c := Start(t, Options{Topics: map[string]int32{"t": 1}, Users: []User{{"PLAIN", "bob", "right"}}})
	c.Produce(t, rec("t", 0, "x"))
	bad := *c
	bad.Opts.Users = []User{{"PLAIN", "bob", "wrong"}}
	cl := bad.Client(t, kgo.RequestRetries(0))
	cx, cancel := ctx()
	defer cancel()
	_, err := cl.Request(cx, kmsg.NewPtrMetadataRequest())
	if !errors.Is(err, io.EOF) {
		t.Fatalf("metadata request with a wrong password: %v, want the connection closed", err)
	}
}

// Pause stops the process (the kernel reports it stopped), Resume lets it serve again, and a cluster stopped
// cleanly with a data directory restarts on the same port with its records.
func TestHarnessPauseResumeRestart(t *testing.T) {
	c := Start(t, Options{Topics: map[string]int32{"t": 1}, DataDir: t.TempDir()})
	c.Produce(t, rec("t", 0, "before"))
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	waitState(t, c.cmd.Process.Pid, 'T')
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	c.Produce(t, rec("t", 0, "resumed"))
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	c2, err := c.Restart()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c2.Kill)
	if c2.Bootstrap() != c.Bootstrap() {
		t.Fatalf("restarted on %s, want %s", c2.Bootstrap(), c.Bootstrap())
	}
	if got, want := values(c2.ConsumeAll(t, "t")), "0:before 0:resumed"; got != want {
		t.Fatalf("after restart: consumed %q, want %q", got, want)
	}
	c2.Kill()
}

// waitState waits until /proc reports the process in state (SIGSTOP takes effect asynchronously).
func waitState(t *testing.T, pid int, state byte) {
	t.Helper()
	for i := 0; ; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		// pid (comm) S ...: the state follows the last ')'.
		s := string(b)
		if j := strings.LastIndexByte(s, ')'); j >= 0 && j+2 < len(s) && s[j+2] == state {
			return
		}
		if i > 10000 {
			t.Fatalf("process %d never reached state %c: %s", pid, state, s)
		}
		time.Sleep(time.Millisecond)
	}
}
