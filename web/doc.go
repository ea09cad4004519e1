// Package web is the engine's HTTP endpoint (`clinksql serve --http`): Prometheus metrics at /metrics (the
// engine's registry, Engine.Registry), liveness at /healthz (200 while the process serves), readiness at /readyz
// (503 until the engine has re-deployed its jobs, Engine.Ready), a read-only JSON API under /api that the console
// uses, and the console itself (web/console) at / and /static/. A server may listen before its engine exists
// (SetEngine gives it once engine.Open returned): serve does so, so that a long re-deploy shows as alive and not
// ready rather than as a closed port.
//
// Access: a server configured with users (pgwire's, name to password) asks every request but /healthz and /readyz
// for HTTP basic auth against them, whatever its address; the probes stay open so that a load balancer or an
// orchestrator can use them, and they tell nothing but up/ready. A server without users may only listen on a
// loopback address: New refuses any other, judged on the address actually bound (a host name, "" or 0.0.0.0
// included). With Config.TLS it serves HTTPS only. The server's timeouts (header, read, write, idle) and header
// size bound what one slow or hostile client can hold; the console therefore polls the API rather than holding
// a response open past WriteTimeout.
//
// It must never change the engine's state: every handler only reads (Engine.Registry, JobInfos, OperatorInfos,
// EdgeInfos, CheckpointInfos, Ready), and nothing here runs SQL or starts, stops or alters a job.
package web
