package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ClientConfig is how a Kafka client reaches the brokers: Flink's 'properties.*' options that we map to franz-go.
// Sources and sinks read it the same way (ClientConfigFromOptions).
type ClientConfig struct {
	Brokers  []string
	ClientID string
	// Protocol is properties.security.protocol: PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL.
	Protocol string
	// Mechanism is properties.sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with the user and password
	// read from properties.sasl.jaas.config; "" without SASL.
	Mechanism      string
	User, Password string
	// TLS is the client's TLS configuration with SSL and SASL_SSL, nil otherwise.
	TLS *tls.Config
	// RequestTimeout bounds one request (properties.request.timeout.ms; 0: franz-go's default).
	RequestTimeout time.Duration
}

// clientProperties are the 'properties.*' keys ClientConfigFromOptions maps; a source or sink adds its own.
var clientProperties = []string{
	"properties.bootstrap.servers", "properties.client.id", "properties.security.protocol",
	"properties.sasl.mechanism", "properties.sasl.jaas.config", "properties.ssl.truststore.location",
	"properties.ssl.truststore.type", "properties.ssl.truststore.certificates",
	"properties.ssl.endpoint.identification.algorithm", "properties.request.timeout.ms",
}

// ClientConfigFromOptions reads the client settings of the WITH options (keys lower case). path resolves a file
// option (the truststore) against the allowed directories; nil takes it as written. Errors are *ConfigErrors at
// the option.
func ClientConfigFromOptions(opts map[string]string, path func(string) (string, error)) (ClientConfig, error) {
	var c ClientConfig
	servers := opts["properties.bootstrap.servers"]
	if strings.TrimSpace(servers) == "" {
		return c, optionError("properties.bootstrap.servers", "option 'properties.bootstrap.servers' is required (host:port[,host:port...])")
	}
	for _, s := range strings.Split(servers, ",") {
		s = strings.TrimSpace(s)
		if i := strings.LastIndexByte(s, ':'); i <= 0 || i == len(s)-1 {
			return c, optionError("properties.bootstrap.servers", "option 'properties.bootstrap.servers': '%s' is not host:port", s)
		} else if p, err := strconv.Atoi(s[i+1:]); err != nil || p < 1 || p > 65535 {
			return c, optionError("properties.bootstrap.servers", "option 'properties.bootstrap.servers': '%s' has no valid port", s)
		}
		c.Brokers = append(c.Brokers, s)
	}
	c.ClientID = opts["properties.client.id"]
	c.Protocol = strings.ToUpper(opts["properties.security.protocol"])
	switch c.Protocol {
	case "":
		c.Protocol = "PLAINTEXT"
	case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return c, optionError("properties.security.protocol", "option 'properties.security.protocol' = '%s': want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", opts["properties.security.protocol"])
	}
	sasl := strings.HasPrefix(c.Protocol, "SASL_")
	mech, hasMech := opts["properties.sasl.mechanism"]
	jaas, hasJaas := opts["properties.sasl.jaas.config"]
	switch {
	case !sasl && (hasMech || hasJaas):
		k := "properties.sasl.mechanism"
		if !hasMech {
			k = "properties.sasl.jaas.config"
		}
		return c, optionError(k, "option '%s' needs 'properties.security.protocol' = 'SASL_PLAINTEXT' or 'SASL_SSL'", k)
	case sasl && !hasMech:
		return c, optionError("properties.security.protocol", "security protocol %s needs 'properties.sasl.mechanism' (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", c.Protocol)
	case sasl:
		c.Mechanism = strings.ToUpper(mech)
		module := ""
		switch c.Mechanism {
		case "PLAIN":
			module = "org.apache.kafka.common.security.plain.PlainLoginModule"
		case "SCRAM-SHA-256", "SCRAM-SHA-512":
			module = "org.apache.kafka.common.security.scram.ScramLoginModule"
		default:
			return c, optionError("properties.sasl.mechanism", "option 'properties.sasl.mechanism' = '%s': want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
		}
		if !hasJaas {
			return c, optionError("properties.sasl.mechanism", "SASL needs 'properties.sasl.jaas.config' ('%s required username=\"...\" password=\"...\";')", module)
		}
		var err error
		if c.User, c.Password, err = parseJAAS(jaas, module); err != nil {
			return c, optionError("properties.sasl.jaas.config", "option 'properties.sasl.jaas.config': %v", err)
		}
	}
	tlsKeys := []string{"properties.ssl.truststore.location", "properties.ssl.truststore.type",
		"properties.ssl.truststore.certificates", "properties.ssl.endpoint.identification.algorithm"}
	if !strings.HasSuffix(c.Protocol, "SSL") {
		for _, k := range tlsKeys {
			if _, ok := opts[k]; ok {
				return c, optionError(k, "option '%s' needs 'properties.security.protocol' = 'SSL' or 'SASL_SSL'", k)
			}
		}
	} else {
		var err error
		if c.TLS, err = tlsConfig(opts, path); err != nil {
			return c, err
		}
	}
	if v, ok := opts["properties.request.timeout.ms"]; ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return c, optionError("properties.request.timeout.ms", "option 'properties.request.timeout.ms' = '%s': want a positive number of milliseconds", v)
		}
		c.RequestTimeout = time.Duration(ms) * time.Millisecond
	}
	return c, nil
}

// tlsConfig reads the truststore (PEM only: ssl.truststore.type = PEM with a location, or the certificates
// inline, as Kafka's KIP-651 allows; without either, the system's roots) and the host name check.
func tlsConfig(opts map[string]string, path func(string) (string, error)) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t, ok := opts["properties.ssl.truststore.type"]; ok && !strings.EqualFold(t, "PEM") {
		return nil, optionError("properties.ssl.truststore.type", "option 'properties.ssl.truststore.type' = '%s': only PEM truststores are supported", t)
	}
	var pem []byte
	if loc, ok := opts["properties.ssl.truststore.location"]; ok {
		if _, inline := opts["properties.ssl.truststore.certificates"]; inline {
			return nil, optionError("properties.ssl.truststore.location", "options 'properties.ssl.truststore.location' and 'properties.ssl.truststore.certificates' exclude each other")
		}
		if path != nil {
			var err error
			if loc, err = path(loc); err != nil {
				return nil, &ConfigError{Code: codeOf(err, codeInvalidParameter), Option: "properties.ssl.truststore.location", Msg: err.Error(), Err: err}
			}
		}
		b, err := os.ReadFile(loc)
		if err != nil {
			return nil, &ConfigError{Code: codeUndefinedFile, Option: "properties.ssl.truststore.location", Msg: fmt.Sprintf("truststore: %v", err), Err: err}
		}
		pem = b
	} else if certs, ok := opts["properties.ssl.truststore.certificates"]; ok {
		pem = []byte(certs)
	}
	key := "properties.ssl.truststore.location"
	if _, ok := opts[key]; !ok {
		key = "properties.ssl.truststore.certificates"
	}
	if pem != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, optionError(key, "option '%s': no PEM certificate in it", key)
		}
		cfg.RootCAs = pool
	}
	switch alg := opts["properties.ssl.endpoint.identification.algorithm"]; strings.ToLower(alg) {
	case "https":
	case "":
		if _, ok := opts["properties.ssl.endpoint.identification.algorithm"]; ok {
			// Kafka's '' checks the certificate chain but not the host name.
			roots := cfg.RootCAs
			cfg.InsecureSkipVerify = true
			cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
				return verifyChain(raw, roots)
			}
		}
	default:
		return nil, optionError("properties.ssl.endpoint.identification.algorithm", "option 'properties.ssl.endpoint.identification.algorithm' = '%s': want 'https' or ''", alg)
	}
	return cfg, nil
}

// verifyChain checks a server's certificate chain against roots (nil: the system's) without a host name.
func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("the server sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return err
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// parseJAAS reads Flink's (Kafka's) JAAS line: `<module> required username="u" password="p";`. The module must
// be the mechanism's; values are quoted, with \" and \\ escapes.
func parseJAAS(s, module string) (user, password string, err error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(s, ";")
	fields := strings.Fields(s)
	if len(fields) < 2 {
		return "", "", fmt.Errorf("want '%s required username=\"...\" password=\"...\";'", module)
	}
	if fields[0] != module {
		return "", "", fmt.Errorf("login module %s does not go with this mechanism (want %s)", fields[0], module)
	}
	rest := strings.TrimSpace(s[len(fields[0]):])
	flag, rest, _ := strings.Cut(rest, " ")
	switch flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return "", "", fmt.Errorf("want a control flag (required) after the login module, got %q", flag)
	}
	vals := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			return "", "", fmt.Errorf("want key=\"value\", got %q", rest)
		}
		k = strings.TrimSpace(k)
		v = strings.TrimLeft(v, " ")
		if !strings.HasPrefix(v, `"`) {
			return "", "", fmt.Errorf("the value of %s must be quoted", k)
		}
		var b strings.Builder
		i := 1
		for ; i < len(v) && v[i] != '"'; i++ {
			if v[i] == '\\' && i+1 < len(v) {
				i++
			}
			b.WriteByte(v[i])
		}
		if i >= len(v) {
			return "", "", fmt.Errorf("unterminated value of %s", k)
		}
		vals[k] = b.String()
		rest = v[i+1:]
	}
	user, okU := vals["username"]
	password, okP := vals["password"]
	if !okU || !okP || user == "" {
		return "", "", errors.New("username and password are required")
	}
	return user, password, nil
}

// Opts are the franz-go options that reach the brokers.
func (c ClientConfig) Opts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...)}
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	switch c.Mechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: c.User, Pass: c.Password}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.User, Pass: c.Password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.User, Pass: c.Password}.AsSha512Mechanism()))
	}
	if c.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(c.TLS.Clone()))
	}
	if c.RequestTimeout > 0 {
		opts = append(opts, kgo.RequestTimeoutOverhead(c.RequestTimeout))
	}
	return opts
}
