package kafka

import (
	"slices"
	"strings"

	"github.com/clinksql/clinksql/connectors"
)

// MetadataKey is an attribute of a Kafka record that a metadata column (`METADATA [FROM 'key'] [VIRTUAL]`) can
// carry, with Flink's names.
type MetadataKey = connectors.MetadataKey

// Metadata are the keys of the kafka and upsert-kafka connectors. Flink's headers are a MAP<STRING, BYTES>; we
// have no MAP type, so headers are a JSON object text ({"name": "value", ...}; a value that is not UTF-8 is
// written with U+FFFD replacements, a repeated header keeps its last value).
var Metadata = []MetadataKey{
	{Name: "topic", Types: []string{"VARCHAR", "TEXT"}},
	{Name: "partition", Types: []string{"INT", "BIGINT"}},
	{Name: "headers", Types: []string{"VARCHAR", "TEXT"}, Writable: true},
	{Name: "leader-epoch", Types: []string{"INT", "BIGINT"}},
	{Name: "offset", Types: []string{"BIGINT"}},
	{Name: "timestamp", Types: []string{"TIMESTAMP"}, Writable: true},
	{Name: "timestamp-type", Types: []string{"VARCHAR", "TEXT"}},
}

// LookupMetadata returns the metadata key called name.
func LookupMetadata(name string) (MetadataKey, bool) {
	i := slices.IndexFunc(Metadata, func(k MetadataKey) bool { return k.Name == name })
	if i < 0 {
		return MetadataKey{}, false
	}
	return Metadata[i], true
}

// MetadataNames lists the keys, for errors.
func MetadataNames() string {
	names := make([]string, len(Metadata))
	for i, k := range Metadata {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}
