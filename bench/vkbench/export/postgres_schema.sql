-- The table Valkey's own dashboards read, so Grafana shows vkbench's numbers unchanged.
-- benchmark_metrics (columns, types and indexes) follows dashboards/schema.sql of
-- valkey-io/valkey-perf-benchmark (BSD-3-Clause, commit 0c25d8b3de69), written here again with
-- IF NOT EXISTS so that exporting into a database that already has it changes nothing.
CREATE TABLE IF NOT EXISTS benchmark_metrics (
    id SERIAL PRIMARY KEY,
    timestamp TIMESTAMPTZ NOT NULL,
    commit VARCHAR(40) NOT NULL,
    command VARCHAR(50) NOT NULL,
    data_size INTEGER,
    pipeline INTEGER,
    clients INTEGER,
    requests INTEGER,
    rps DECIMAL(12,2),
    avg_latency_ms DECIMAL(10,3),
    min_latency_ms DECIMAL(10,3),
    p50_latency_ms DECIMAL(10,3),
    p95_latency_ms DECIMAL(10,3),
    p99_latency_ms DECIMAL(10,3),
    max_latency_ms DECIMAL(10,3),
    cluster_mode BOOLEAN,
    tls BOOLEAN,
    io_threads INTEGER,
    benchmark_threads INTEGER,
    benchmark_mode VARCHAR(50),
    duration INTEGER,
    warmup INTEGER,
    architecture VARCHAR(50),
    created_at TIMESTAMPTZ DEFAULT NOW()
);
CREATE INDEX IF NOT EXISTS idx_benchmark_metrics_unique ON benchmark_metrics
    (timestamp, commit, command, data_size, pipeline, rps, cluster_mode, tls, io_threads, architecture);
CREATE INDEX IF NOT EXISTS idx_benchmark_metrics_timestamp_command ON benchmark_metrics (timestamp, command);

-- vkbench's own: which series point each exported row is (a point is exported once, so exporting
-- the same history again adds no row), and what benchmark_metrics has no column for.
CREATE TABLE IF NOT EXISTS vkbench_exported_points (
    series_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    cell_id TEXT NOT NULL,
    metrics_id INTEGER NOT NULL REFERENCES benchmark_metrics (id) ON DELETE CASCADE,
    machine_class TEXT,
    version TEXT,
    valid BOOLEAN NOT NULL,
    exported_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    PRIMARY KEY (series_id, run_id, cell_id)
);
