// Package all registers every connector: the planner imports it for its side effect, so a connector package is
// linked in and known by name only through this list.
package all

import (
	_ "github.com/clinksql/clinksql/connectors/blackhole"
	_ "github.com/clinksql/clinksql/connectors/datagen"
	_ "github.com/clinksql/clinksql/connectors/file"
	_ "github.com/clinksql/clinksql/connectors/kafka"
	_ "github.com/clinksql/clinksql/connectors/nats"
	_ "github.com/clinksql/clinksql/connectors/nexmark"
	_ "github.com/clinksql/clinksql/connectors/parquet"
	_ "github.com/clinksql/clinksql/connectors/postgres"
	_ "github.com/clinksql/clinksql/connectors/postgrescdc"
)
