/// `# HELP` lines for the families made through swift-metrics, which has no place for a help text:
/// Prometheus shows it beside each family, so every family at `/metrics` carries one.
enum MetricHelp {
    static let texts: [String: String] = [
        "pinwheel_batches_total": "Batches of features sent to viewers.",
        "pinwheel_bytes_in_total": "Bytes of messages received from viewers, after inflating.",
        "pinwheel_bytes_out_total": "Bytes of messages sent to viewers, before deflating.",
        "pinwheel_changes_accepted_total": "Changes producers sent that were made durable and applied.",
        "pinwheel_closes_total": "Sessions closed, by WebSocket close code.",
        "pinwheel_cores_short":
            "1 while the machine is judged short of cores and the workers and compactions yield to the index thread.",
        "pinwheel_data_version": "The version of the data served (the change log's last applied change).",
        "pinwheel_dataset_points": "Points served from the data file at start.",
        "pinwheel_dataset_rows_left_out": "Rows of the data file left out, by reason (bad or unlocated).",
        "pinwheel_index_delta_points": "Points the live index lays over its last full build.",
        "pinwheel_index_rebuild_seconds": "How long full rebuilds of the live index (compactions) took.",
        "pinwheel_index_refresh_seconds": "How long laying the latest changes over the last build took.",
        "pinwheel_ingest_accepted_per_second": "Changes accepted a second over all producers, the last whole second.",
        "pinwheel_ingest_held_seconds_total": "Time producers' batches waited for their share of the CPU.",
        "pinwheel_messages_in_total": "Messages received from viewers, by type.",
        "pinwheel_messages_out_total": "Messages sent to viewers, by type.",
        "pinwheel_queue_depth": "Work waiting: sessions queued for the workers, or bytes queued for sockets.",
        "pinwheel_refresh_interval_seconds": "The wait between two refreshes of the live index now.",
        "pinwheel_sessions": "Open viewer sessions.",
        "pinwheel_turns_total": "Sessions' turns, by the thread that ran them (a worker or the service thread).",
        "pinwheel_view_refreshes_total": "Served views computed again because the data changed.",
        "pinwheel_viewport_first_batch_seconds": "From a viewport received to its first batch handed to the transport.",
        "pinwheel_viewport_reads_total": "Viewports read whole or as a move from the previous view.",
        "pinwheel_viewport_window_wait_seconds": "How long batches waited for the client's window to open.",
    ]

    /// `text` with a `# HELP` line before each `# TYPE` line of a family that has none and is in ``texts``.
    static func adding(to text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count + 4096)
        var previous: Substring = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE "), !previous.hasPrefix("# HELP "),
                let name = line.dropFirst(7).split(separator: " ").first, let help = texts[String(name)]
            {
                out += "# HELP \(name) \(help)\n"
            }
            out += line
            out += "\n"
            previous = line
        }
        // split kept the text's last newline as an empty last line.
        if text.hasSuffix("\n") { out.removeLast() }
        return out
    }
}
