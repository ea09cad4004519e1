package kafkatest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/clinksql/clinksql/tests/clients/testserver"
)

// Options configure one kfakeserver process.
type Options struct {
	Brokers       int              // number of brokers (0: 1), each on a free loopback port
	Ports         []int            // fixed ports instead (0: a free one); Restart reuses the ports it got
	Topics        map[string]int32 // topics created at start, with their partition counts
	Users         []User           // SASL users; any enables SASL (clients of Client log in as the first)
	BrokerConfigs map[string]string
	DataDir       string // persist the cluster's state here (a restarted process reloads it)
	TLSCert       string // PEM files: serve TLS (Client trusts the certificate)
	TLSKey        string
	Args          []string // further kfakeserver flags
}

// User is a SASL user: Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
type User struct{ Mechanism, Name, Password string }

// Timeout bounds every helper's wait: the start of a process, a produce, a consume to the end.
var Timeout = 60 * time.Second

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// Binary builds the kfakeserver command once per process (later calls return the same path). Main removes it.
func Binary() (string, error) {
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "kafkatest-bin-"); buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "kfakeserver")
		cmd := exec.Command("go", "build", "-o", buildBin, "github.com/clinksql/clinksql/tests/kafkatest/kfakeserver")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./tests/kafkatest/kfakeserver: %v\n%s", err, out)
			return
		}
		// The binary is a separate build: make its sources inputs of the calling test's cached result.
		buildErr = testserver.StatSources()
	})
	return buildBin, buildErr
}

// Main is the TestMain of a package that starts clusters: it runs the tests and removes the binary Binary built.
func Main(m *testing.M) {
	code := m.Run()
	RemoveBinary()
	os.Exit(code)
}

// RemoveBinary removes the binary Binary built: a program that launched clusters calls it at its end, and so does
// a TestMain that cannot call Main.
func RemoveBinary() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// Cluster is one running kfakeserver process.
type Cluster struct {
	Opts  Options
	Addrs []string // the bootstrap addresses, one per broker

	cmd     *exec.Cmd
	out     *testserver.SyncBuffer
	done    chan struct{}
	waitErr error
	ended   bool
}

var readyRE = regexp.MustCompile(`kfake: listening on (\S+)\n`)

// Launch starts a kfakeserver process and waits for its ready line.
func Launch(o Options) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var args []string
	if len(o.Ports) > 0 {
		for _, p := range o.Ports {
			args = append(args, "-port", strconv.Itoa(p))
		}
	} else if o.Brokers > 0 {
		args = append(args, "-brokers", strconv.Itoa(o.Brokers))
	}
	for name, n := range o.Topics {
		args = append(args, "-topic", fmt.Sprintf("%s:%d", name, n))
	}
	for _, u := range o.Users {
		args = append(args, "-sasl", u.Mechanism+":"+u.Name+":"+u.Password)
	}
	for k, v := range o.BrokerConfigs {
		args = append(args, "-broker-config", k+"="+v)
	}
	if o.DataDir != "" {
		args = append(args, "-data-dir", o.DataDir)
	}
	if o.TLSCert != "" {
		args = append(args, "-tls-cert", o.TLSCert, "-tls-key", o.TLSKey)
	}
	args = append(args, o.Args...)
	c := &Cluster{Opts: o, out: &testserver.SyncBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	c.cmd.SysProcAttr = testserver.ProcAttr()
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start kfakeserver: %v", err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.done)
	}()
	deadline := time.After(Timeout)
	for {
		if m := readyRE.FindStringSubmatch(c.out.String()); m != nil {
			c.Addrs = strings.Split(m[1], ",")
			return c, nil
		}
		select {
		case <-c.done:
			return nil, fmt.Errorf("kfakeserver %q exited before it was ready (%v):\n%s", args, c.waitErr, c.out.String())
		case <-deadline:
			c.Kill()
			return nil, fmt.Errorf("kfakeserver printed no ready line within %v:\n%s", Timeout, c.out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Start launches a cluster for a test and kills it when the test ends.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	c, err := Launch(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	return c
}

// Bootstrap is the comma-separated list of the brokers' addresses (properties.bootstrap.servers).
func (c *Cluster) Bootstrap() string { return strings.Join(c.Addrs, ",") }

// Pid is the process id of the kfakeserver process.
func (c *Cluster) Pid() int { return c.cmd.Process.Pid }

// Output is everything the process printed so far.
func (c *Cluster) Output() string { return c.out.String() }

// Stop sends SIGTERM (resuming a paused process first) and waits for a clean exit.
func (c *Cluster) Stop() error {
	if c.ended {
		return nil
	}
	c.ended = true
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGCONT)
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM: %v", err)
	}
	select {
	case <-c.done:
	case <-time.After(Timeout):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
		return fmt.Errorf("kfakeserver did not exit within %v of SIGTERM:\n%s", Timeout, c.out.String())
	}
	var ee *exec.ExitError
	if errors.As(c.waitErr, &ee) {
		return fmt.Errorf("kfakeserver exited with %v after SIGTERM:\n%s", ee.ProcessState, c.out.String())
	}
	return c.waitErr
}

// Kill ends the process at once (SIGKILL to its process group) and waits for it.
func (c *Cluster) Kill() {
	if c.ended {
		return
	}
	c.ended = true
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.done
}

// Pause stops the process (SIGSTOP): connections stay open and nothing answers until Resume.
func (c *Cluster) Pause() error { return syscall.Kill(-c.cmd.Process.Pid, syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (c *Cluster) Resume() error { return syscall.Kill(-c.cmd.Process.Pid, syscall.SIGCONT) }

// Restart launches a new process with the same options on the ports this one listened on (its state survives
// only with Options.DataDir). The old process must have ended (Stop or Kill).
func (c *Cluster) Restart() (*Cluster, error) {
	if !c.ended {
		return nil, errors.New("kafkatest: Restart of a running cluster")
	}
	o := c.Opts
	o.Ports = nil
	for _, a := range c.Addrs {
		_, p, err := net.SplitHostPort(a)
		if err != nil {
			return nil, err
		}
		n, _ := strconv.Atoi(p)
		o.Ports = append(o.Ports, n)
	}
	return Launch(o)
}

// ClientOpts are the options that reach this cluster: its seeds, the first SASL user's login and TLS trust.
func (c *Cluster) ClientOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Addrs...)}
	if len(c.Opts.Users) > 0 {
		u := c.Opts.Users[0]
		switch u.Mechanism {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: u.Name, Pass: u.Password}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: u.Name, Pass: u.Password}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: u.Name, Pass: u.Password}.AsSha512Mechanism()))
		}
	}
	if c.Opts.TLSCert != "" {
		pem, err := os.ReadFile(c.Opts.TLSCert)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate in %s", c.Opts.TLSCert)
		}
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	return opts, nil
}

// Client is a franz-go client of this cluster (ClientOpts, then opts), closed when the test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base, err := c.ClientOpts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin is an admin client of this cluster, closed when the test ends.
func (c *Cluster) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return kadm.NewClient(c.Client(t))
}

func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), Timeout)
}

// CreateTopic creates a topic with partitions partitions.
func (c *Cluster) CreateTopic(t testing.TB, topic string, partitions int32) {
	t.Helper()
	cx, cancel := ctx()
	defer cancel()
	resp, err := c.Admin(t).CreateTopic(cx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// AddPartitions grows topic by n partitions.
func (c *Cluster) AddPartitions(t testing.TB, topic string, n int) {
	t.Helper()
	cx, cancel := ctx()
	defer cancel()
	resp, err := c.Admin(t).CreatePartitions(cx, n, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("add %d partitions to %s: %v", n, topic, err)
	}
}

// Produce writes records (each names its Topic and, to choose it, its Partition) and waits for every ack. A
// record with a Partition >= 0 goes to that partition; kgo's default partitioner places the others.
func (c *Cluster) Produce(t testing.TB, records ...*kgo.Record) {
	t.Helper()
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	c.produce(t, cl, records)
	cl.Close()
}

func (c *Cluster) produce(t testing.TB, cl *kgo.Client, records []*kgo.Record) {
	t.Helper()
	cx, cancel := ctx()
	defer cancel()
	if err := cl.ProduceSync(cx, records...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// ProduceTxn writes records in one transaction of transactional id txnID and commits it (commit) or aborts it.
// Records go to their Partition, as in Produce.
func (c *Cluster) ProduceTxn(t testing.TB, txnID string, commit bool, records ...*kgo.Record) {
	t.Helper()
	cl := c.Client(t, kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin transaction: %v", err)
	}
	c.produce(t, cl, records)
	cx, cancel := ctx()
	defer cancel()
	if err := cl.EndTransaction(cx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// ConsumeAll reads topics from the start with a read_committed consumer up to their last stable offsets at the
// call (every record a committed transaction or a plain produce wrote before it) and returns the records in
// partition order, then offset order. Aborted records and the transactions' control records are not returned.
func (c *Cluster) ConsumeAll(t testing.TB, topics ...string) []*kgo.Record {
	t.Helper()
	cx, cancel := ctx()
	defer cancel()
	// ListCommittedOffsets asks with the read_committed isolation level: the answer is the last stable offset.
	ends, err := c.Admin(t).ListCommittedOffsets(cx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets of %v: %v", topics, err)
	}
	parts := map[string]map[int32]kgo.Offset{}
	want := map[string]map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			return
		}
		if parts[o.Topic] == nil {
			parts[o.Topic], want[o.Topic] = map[int32]kgo.Offset{}, map[int32]int64{}
		}
		parts[o.Topic][o.Partition] = kgo.NewOffset().AtStart()
		want[o.Topic][o.Partition] = o.Offset
	})
	if len(parts) == 0 {
		return nil
	}
	// Control records are kept so that a partition whose last records before the end are a transaction's marker
	// is seen to reach the end.
	cl := c.Client(t, kgo.ConsumePartitions(parts), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords())
	defer cl.Close()
	next := map[string]map[int32]int64{}
	byPart := map[string]map[int32][]*kgo.Record{}
	for topic := range want {
		next[topic], byPart[topic] = map[int32]int64{}, map[int32][]*kgo.Record{}
	}
	remaining := 0
	for _, ps := range want {
		remaining += len(ps)
	}
	for remaining > 0 {
		fs := cl.PollFetches(cx)
		if err := cx.Err(); err != nil {
			t.Fatalf("consume %v: not at the end offsets %v after %v (reached %v)", topics, want, Timeout, next)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consume %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			end := want[r.Topic][r.Partition]
			if r.Offset >= end {
				return
			}
			if next[r.Topic][r.Partition] < end && r.Offset+1 >= end {
				remaining--
			}
			next[r.Topic][r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				byPart[r.Topic][r.Partition] = append(byPart[r.Topic][r.Partition], r)
			}
		})
	}
	var out []*kgo.Record
	for _, topic := range topics {
		ps := byPart[topic]
		for p := int32(0); len(ps) > 0; p++ {
			out = append(out, ps[p]...)
			delete(ps, p)
		}
	}
	return out
}
