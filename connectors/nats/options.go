package nats

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	natsgo "github.com/nats-io/nats.go"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/file"
	"github.com/clinksql/clinksql/exec/expr"
)

// Formats of a message's payload.
const (
	FormatJSON = "json"
	FormatCSV  = "csv"
	FormatRaw  = "raw"
)

// Startup modes of a new consumer.
const (
	StartEarliest = "earliest-offset"
	StartLatest   = "latest-offset"
)

// Defaults.
const (
	// DefaultAckWait is the consumer's AckWait when 'nats.ack-wait' is not set and the job's checkpoint interval
	// is short; with a longer interval the default is 3 intervals.
	DefaultAckWait = 30 * time.Second
	// DefaultFetchSize is the messages one pull request asks for; the source keeps up to two requests' worth in
	// flight.
	DefaultFetchSize = 8192
	// DefaultBatchRows bounds the rows of one batch.
	DefaultBatchRows = 8192
)

// clientOptions are the connection options of the source and the sink.
var clientOptions = []string{"nats.url", "nats.user", "nats.password", "nats.token", "nats.creds-file",
	"nats.tls.ca-file", "nats.tls.cert-file", "nats.tls.key-file"}

var sourceOptions = append(slices.Clone(clientOptions), "nats.stream", "nats.subject", "nats.consumer", "format",
	"errors.bad-rows", "nats.ack-wait", "nats.max-ack-pending", "nats.fetch-size", "scan.startup.mode")

var sinkOptions = append(slices.Clone(clientOptions), "nats.subject", "format")

// Client is how to reach the server.
type Client struct {
	URL            string
	User, Password string
	Token          string
	CredsFile      string
	CAFile         string
	CertFile       string
	KeyFile        string
}

// Options are the nats.go connection options.
func (c Client) Options(name string) ([]natsgo.Option, error) {
	opts := []natsgo.Option{natsgo.Name(name), natsgo.MaxReconnects(-1), natsgo.ReconnectWait(100 * time.Millisecond),
		natsgo.Timeout(10 * time.Second)}
	if c.User != "" {
		opts = append(opts, natsgo.UserInfo(c.User, c.Password))
	}
	if c.Token != "" {
		opts = append(opts, natsgo.Token(c.Token))
	}
	if c.CredsFile != "" {
		opts = append(opts, natsgo.UserCredentials(c.CredsFile))
	}
	if c.CAFile != "" || c.CertFile != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("no certificate in %s", c.CAFile)
			}
			cfg.RootCAs = pool
		}
		if c.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
			if err != nil {
				return nil, err
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, natsgo.Secure(cfg))
	}
	return opts, nil
}

// Connect connects to the server.
func (c Client) Connect(name string) (*natsgo.Conn, error) {
	opts, err := c.Options(name)
	if err != nil {
		return nil, err
	}
	return natsgo.Connect(c.URL, opts...)
}

func optionError(option, format string, args ...any) *connectors.ConfigError {
	return connectors.OptionError(option, format, args...)
}

func clientFromOptions(kind string, opts map[string]string, path func(string) (string, error)) (Client, error) {
	c := Client{URL: strings.TrimSpace(opts["nats.url"]), User: opts["nats.user"], Password: opts["nats.password"],
		Token: opts["nats.token"]}
	if c.URL == "" {
		return c, optionError("", "connector 'nats' (%s) needs 'nats.url' (nats://host:4222, comma separated for several servers)", kind)
	}
	for _, u := range strings.Split(c.URL, ",") {
		u = strings.TrimSpace(u)
		if !strings.Contains(u, "://") && strings.Contains(u, "/") || u == "" {
			return c, optionError("nats.url", "option 'nats.url' = '%s': want nats://host:port (comma separated)", c.URL)
		}
	}
	if c.Password != "" && c.User == "" {
		return c, optionError("nats.password", "option 'nats.password' needs 'nats.user'")
	}
	if c.Token != "" && c.User != "" {
		return c, optionError("nats.token", "options 'nats.token' and 'nats.user' exclude each other")
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"nats.creds-file", &c.CredsFile}, {"nats.tls.ca-file", &c.CAFile}, {"nats.tls.cert-file", &c.CertFile}, {"nats.tls.key-file", &c.KeyFile}} {
		v := strings.TrimSpace(opts[f.key])
		if v == "" {
			continue
		}
		if path != nil {
			p, err := path(v)
			if err != nil {
				return c, &connectors.ConfigError{Code: "42501", Option: f.key, Msg: err.Error(), Err: err}
			}
			v = p
		}
		if _, err := os.Stat(v); err != nil {
			return c, &connectors.ConfigError{Code: "58P01", Option: f.key, Msg: fmt.Sprintf("option '%s': %v", f.key, err), Err: err}
		}
		*f.dst = v
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return c, optionError("nats.tls.cert-file", "options 'nats.tls.cert-file' and 'nats.tls.key-file' go together")
	}
	return c, nil
}

func intOption(key, v string, min int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < min {
		return 0, optionError(key, "option '%s' = '%s': want an integer >= %d", key, v, min)
	}
	return n, nil
}

// validName is a stream or consumer name JetStream accepts.
func validName(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\r\n.*>/\\")
}

func validSubject(s string, wildcards bool) bool {
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		switch {
		case t == "":
			return false
		case !wildcards && (t == "*" || t == ">"):
			return false
		case t == ">" && i != len(toks)-1:
			return false
		}
	}
	return true
}

// format reads 'format' and checks that the data columns fit it.
func format(kind string, opts map[string]string, dataCols []arrow.Field) (string, error) {
	f := strings.ToLower(strings.TrimSpace(opts["format"]))
	switch f {
	case "":
		return "", optionError("", "connector 'nats' (%s) needs 'format': json, csv or raw", kind)
	case FormatJSON, FormatCSV:
		if kind == "source" {
			if err := file.CheckTextSchema(arrow.NewSchema(dataCols, nil)); err != nil {
				for _, c := range dataCols {
					if file.CheckTextSchema(arrow.NewSchema([]arrow.Field{c}, nil)) != nil {
						return "", connectors.ColumnError(c.Name, "format '%s': column %s: type %s has no text form", f, c.Name, expr.TypeName(c.Type))
					}
				}
				return "", err
			}
		}
	case FormatRaw:
		if len(dataCols) != 1 {
			return "", optionError("format", "format 'raw' carries exactly one column (VARCHAR or BYTEA) in the payload; there are %d", len(dataCols))
		}
		if id := dataCols[0].Type.ID(); id != arrow.STRING && id != arrow.BINARY {
			return "", connectors.ColumnError(dataCols[0].Name, "format 'raw' carries a VARCHAR or BYTEA column; %s is %s", dataCols[0].Name, expr.TypeName(dataCols[0].Type))
		}
	default:
		return "", optionError("format", "option 'format' = '%s': want json, csv or raw", f)
	}
	return f, nil
}
