// Command kfakeserver runs franz-go's fake Kafka cluster (pkg/kfake) as its own process, for tests that need a
// Kafka-protocol server they can stop, kill (-9) and pause (SIGSTOP) like a real broker. tests/kafkatest builds
// and drives it; it is not part of clinksql.
//
// Once every broker listens it prints one line on stdout, "kfake: listening on ADDR[,ADDR...]" (the bootstrap
// addresses), and runs until SIGTERM or SIGINT, when it closes the cluster (saving its state when -data-dir is
// set) and exits 0.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (f *listFlag) String() string     { return strings.Join(*f, ",") }
func (f *listFlag) Set(s string) error { *f = append(*f, s); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kfakeserver:", err)
		os.Exit(2)
	}
}

func run() error {
	var (
		ports, sasl, topics, bcfgs         listFlag
		brokers, defaultPartitions         int
		dataDir, logLevel, tlsCert, tlsKey string
		syncWrites, autoCreate             bool
		minSession, maxSession             time.Duration
	)
	flag.Var(&ports, "port", "port of one broker, 0 for a free one (repeatable; overrides -brokers)")
	flag.IntVar(&brokers, "brokers", 1, "number of brokers, each on a free loopback port")
	flag.Var(&sasl, "sasl", "enable SASL with the user MECHANISM:USER:PASSWORD, MECHANISM one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (repeatable)")
	flag.Var(&topics, "topic", "seed topic NAME:PARTITIONS (repeatable)")
	flag.Var(&bcfgs, "broker-config", "broker config KEY=VALUE, e.g. transaction.max.timeout.ms=900000 (repeatable)")
	flag.IntVar(&defaultPartitions, "default-partitions", 0, "partitions of auto-created topics and CreateTopics with -1 (kfake's default 10)")
	flag.BoolVar(&autoCreate, "auto-create-topics", false, "let metadata requests create topics")
	flag.StringVar(&dataDir, "data-dir", "", "persist the cluster's state here and reload it at start")
	flag.BoolVar(&syncWrites, "sync", false, "with -data-dir: fsync every write")
	flag.StringVar(&tlsCert, "tls-cert", "", "serve TLS with this PEM certificate (needs -tls-key)")
	flag.StringVar(&tlsKey, "tls-key", "", "PEM key of -tls-cert")
	flag.DurationVar(&minSession, "group-min-session-timeout", 0, "groups' minimum session timeout (kfake's default 6s)")
	flag.DurationVar(&maxSession, "group-max-session-timeout", 0, "groups' maximum session timeout (kfake's default 5m)")
	flag.StringVar(&logLevel, "log-level", "none", "kfake's log on stderr: none, error, warn, info, debug")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	opts := []kfake.Opt{kfake.NumBrokers(brokers)}
	if len(ports) > 0 {
		ps := make([]int, len(ports))
		for i, p := range ports {
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n > 65535 {
				return fmt.Errorf("-port %q: not a port", p)
			}
			ps[i] = n
		}
		opts = append(opts, kfake.Ports(ps...))
	}
	for _, u := range sasl {
		mech, rest, ok1 := strings.Cut(u, ":")
		user, pass, ok2 := strings.Cut(rest, ":")
		switch mech {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			return fmt.Errorf("-sasl %q: mechanism must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", u)
		}
		if !ok1 || !ok2 || user == "" {
			return fmt.Errorf("-sasl %q: want MECHANISM:USER:PASSWORD", u)
		}
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser(mech, user, pass))
	}
	for _, t := range topics {
		name, n, ok := strings.Cut(t, ":")
		parts, err := strconv.Atoi(n)
		if !ok || name == "" || err != nil || parts < 1 {
			return fmt.Errorf("-topic %q: want NAME:PARTITIONS", t)
		}
		opts = append(opts, kfake.SeedTopics(int32(parts), name))
	}
	if len(bcfgs) > 0 {
		m := make(map[string]string, len(bcfgs))
		for _, kv := range bcfgs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("-broker-config %q: want KEY=VALUE", kv)
			}
			m[k] = v
		}
		opts = append(opts, kfake.BrokerConfigs(m))
	}
	if defaultPartitions > 0 {
		opts = append(opts, kfake.DefaultNumPartitions(defaultPartitions))
	}
	if autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	if dataDir != "" {
		opts = append(opts, kfake.DataDir(dataDir))
		if syncWrites {
			opts = append(opts, kfake.SyncWrites())
		}
	}
	if (tlsCert == "") != (tlsKey == "") {
		return fmt.Errorf("-tls-cert and -tls-key go together")
	}
	if tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(tlsCert, tlsKey)
		if err != nil {
			return fmt.Errorf("TLS key pair: %v", err)
		}
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	}
	if minSession > 0 {
		opts = append(opts, kfake.GroupMinSessionTimeout(minSession))
	}
	if maxSession > 0 {
		opts = append(opts, kfake.GroupMaxSessionTimeout(maxSession))
	}
	level := map[string]kfake.LogLevel{"none": kfake.LogLevelNone, "error": kfake.LogLevelError,
		"warn": kfake.LogLevelWarn, "info": kfake.LogLevelInfo, "debug": kfake.LogLevelDebug}
	lvl, ok := level[logLevel]
	if !ok {
		return fmt.Errorf("-log-level %q: want none, error, warn, info or debug", logLevel)
	}
	opts = append(opts, kfake.WithLogger(kfake.BasicLogger(os.Stderr, lvl)))

	// Notify before listening: a SIGTERM that arrives right after the ready line is handled, not fatal.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	fmt.Printf("kfake: listening on %s\n", strings.Join(c.ListenAddrs(), ","))
	<-sigs
	c.Close()
	return nil
}
