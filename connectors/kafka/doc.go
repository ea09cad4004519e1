// Package kafka is the Kafka connector (connector = 'kafka' and 'upsert-kafka', Flink's option names), on
// franz-go's kgo. This file's owner writes the source, options, formats and metadata columns; the sink (sink*,
// txn*, resolve*) is the exactly-once transactional sink of the seed's checkpoint protocol.
//
// Source (NewSource, configured by SourceConfigFromOptions):
//
//   - Partitions are splits: subtask owner(topic, partition, parallelism) reads a partition (Flink's round-robin
//     from a start that depends on the topic), assigned directly (no consumer group, no rebalancing), with
//     read_committed isolation. The offset (SnapshotOffset) is each owned partition's next offset, its end when
//     bounded, and its watermark; a restore reads exactly what followed (the same rows, in each partition's
//     order) and refuses an offset of another parallelism. The group's offsets (properties.group.id) are only
//     informational: committed after each completed checkpoint (exec.CheckpointListener), read only by the
//     'group-offsets' startup mode of a fresh start.
//   - Start positions are resolved to exact offsets when a partition is added (earliest, latest = the last stable
//     offset, timestamp, specific, group with properties.auto.offset.reset), so a checkpoint taken before a
//     partition's first record still knows where it starts. Bounded modes capture their end offsets at the first
//     start and keep them in the offset: the job finishes there, also after a restore.
//   - Every scan.topic-partition-discovery.interval (unbounded only) new partitions, and with topic-pattern new
//     topics, are added and read from their start.
//   - Watermarks per partition: the stream's WATERMARK expression on each partition's rows (a batch holds one
//     partition's rows), its running maximum kept in the offset; the subtask's watermark is the minimum over its
//     partitions that have not finished and have had records within scan.watermark.idle-timeout (when every
//     partition is idle, the maximum). The planner must hand the expression to the source (SourceConfig.Watermark)
//     instead of wrapping it in operators.WithWatermark, and set the node's idle timeout to the same duration.
//   - Fetched records come from a pool of the client (kgo.WithPools): batchOf recycles each record it read once
//     the batch is built, so nothing may keep a *kgo.Record of the fetch past it (the upsert state keeps an
//     encoded copy).
//   - Formats: json and csv through file.TextDecoder (the file source's decoding: Postgres text forms), raw
//     (the bytes as the one VARCHAR or BYTEA column), debezium-json (a changelog: c/r +I, u -U +U, d -D). key.format
//     with key.fields decodes columns from the key; value.fields-include EXCEPT_KEY leaves them out of the value.
//     A record that cannot be read is skipped and counted in the job's errors, logged once per partition
//     (errors.bad-rows = 'skip', Flink's *.ignore-parse-errors = 'true'), or fails the job with a data error
//     naming topic, partition, offset and column ('fail').
//   - Metadata columns (Metadata): topic, partition, offset, timestamp, timestamp-type, leader-epoch, headers
//     (a JSON object text: we have no MAP type).
//   - upsert-kafka: the PRIMARY KEY is the key (key.format required); the subtask keeps each key's last record in
//     its state, so a value is +I (new key) or -U old, +U new, and a null value -D old (nothing for an unknown
//     key). The changelog is the engine's: exec.Batch.Kinds.
//
// Errors: options are refused with *ConfigError at the option (22023) or the column (42804); a topic that does
// not exist fails Open.
package kafka
