package pgwire

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus figures (Config.Registerer): sessions and statements.
type metrics struct {
	connections prometheus.Counter // sessions started (startup and authentication passed)
	open        prometheus.Gauge   // sessions now open
	statements  *prometheus.CounterVec
	// ok and failed are statements' two series, looked up once rather than per statement.
	ok, failed prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		connections: prometheus.NewCounter(prometheus.CounterOpts{Name: "clinksql_pgwire_connections_total",
			Help: "Client sessions started over the Postgres wire protocol (startup and authentication passed)."}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{Name: "clinksql_pgwire_connections_open",
			Help: "Client sessions open over the Postgres wire protocol."}),
		statements: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "clinksql_pgwire_statements_total",
			Help: "Statements run over the Postgres wire protocol, by outcome (ok, error)."}, []string{"outcome"}),
	}
	if reg != nil {
		m.connections = register(reg, m.connections)
		m.open = register(reg, m.open)
		m.statements = register(reg, m.statements)
	}
	// Both series exist from the start, so a rate over errors is 0 rather than absent.
	m.ok = m.statements.WithLabelValues("ok")
	m.failed = m.statements.WithLabelValues("error")
	return m
}

// register registers c, or returns the collector of the same description already registered (a second server on
// the same registry counts into the same series).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// statement counts one statement's outcome.
func (m *metrics) statement(err error) {
	if err != nil {
		m.failed.Inc()
		return
	}
	m.ok.Inc()
}
