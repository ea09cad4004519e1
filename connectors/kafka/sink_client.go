package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The client properties a sink takes through 'properties.*' (Kafka's names; a PEM file where Java takes a keystore):
//
//	security.protocol   PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL
//	sasl.mechanism      PLAIN (default), SCRAM-SHA-256, SCRAM-SHA-512
//	sasl.jaas.config    ... username="u" password="p";  (Flink's form)
//	sasl.username, sasl.password   the same, as two options
//	ssl.ca.location     a PEM file of the CAs to trust (default: the system's)
//	ssl.endpoint.identification.algorithm   '' turns host name verification off ('https', the default, keeps it)
var clientProperties = []string{
	"security.protocol", "sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password", "ssl.ca.location",
	"ssl.endpoint.identification.algorithm",
}

var jaasField = regexp.MustCompile(`(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"`)

func checkProperties(props map[string]string) error {
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range props {
			if !yield(k) {
				return
			}
		}
	}) {
		if !slices.Contains(clientProperties, k) {
			return optionError("properties."+k, "kafka sink: unknown client property 'properties.%s' (known: properties.bootstrap.servers, properties.transaction.timeout.ms, properties.%s)", k, strings.Join(clientProperties, ", properties."))
		}
	}
	_, err := clientOptions(nil, props)
	return err
}

// clientOptions are the kgo options of brokers and the security properties.
func clientOptions(brokers []string, props map[string]string) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	proto := strings.ToUpper(props["security.protocol"])
	useTLS, useSASL := false, false
	switch proto {
	case "", "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, optionError("properties.security.protocol", "kafka sink: 'properties.security.protocol' = '%s' is not supported (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", props["security.protocol"])
	}
	if useTLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if ca := props["ssl.ca.location"]; ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return nil, optionError("properties.ssl.ca.location", "kafka sink: 'properties.ssl.ca.location': %v", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, optionError("properties.ssl.ca.location", "kafka sink: 'properties.ssl.ca.location' = '%s' holds no PEM certificate", ca)
			}
		}
		if alg, ok := props["ssl.endpoint.identification.algorithm"]; ok && alg == "" {
			cfg.InsecureSkipVerify = true
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if useSASL {
		user, pass := props["sasl.username"], props["sasl.password"]
		if jaas := props["sasl.jaas.config"]; jaas != "" {
			for _, m := range jaasField.FindAllStringSubmatch(jaas, -1) {
				v := strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
				if m[1] == "username" {
					user = v
				} else {
					pass = v
				}
			}
		}
		if user == "" {
			return nil, optionError("properties.sasl.jaas.config", "kafka sink: SASL needs a user name ('properties.sasl.jaas.config' with username=\"...\" password=\"...\")")
		}
		switch mech := strings.ToUpper(props["sasl.mechanism"]); mech {
		case "", "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, optionError("properties.sasl.mechanism", "kafka sink: 'properties.sasl.mechanism' = '%s' is not supported (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", props["sasl.mechanism"])
		}
	} else if props["sasl.mechanism"] != "" || props["sasl.jaas.config"] != "" {
		return nil, optionError("properties.sasl.mechanism", "kafka sink: SASL properties need 'properties.security.protocol' = 'SASL_PLAINTEXT' or 'SASL_SSL'")
	}
	return opts, nil
}

func describeBrokers(brokers []string) string { return fmt.Sprintf("'%s'", strings.Join(brokers, ",")) }
