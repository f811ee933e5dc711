import Logging
import PinwheelServer
import PinwheelTransport

extension ServeCommand {
    /// Raises the descriptor limit as far as the process may, caps connections below it and lowers
    /// `--max-sessions` to the cap when it is larger, saying so in the log.
    func budgetDescriptors(_ configuration: inout ServerConfiguration, logger: Logger) {
        let budget = DescriptorBudget.raisedToHardLimit()
        let raised =
            budget.softLimit == budget.startingSoftLimit
            ? "soft limit \(budget.softLimit)"
            : "soft limit raised from \(budget.startingSoftLimit) to \(budget.softLimit)"
        logger.info(
            "descriptors: \(raised), hard limit \(budget.hardLimit); at most \(budget.connections) connections (\(budget.reserve) kept for files, logs and NATS)"
        )
        configuration.maxConnections = budget.connections
        if configuration.maxSessions > budget.connections {
            logger.warning(
                "--max-sessions \(configuration.maxSessions) is more than the descriptor budget allows: lowered to \(budget.connections) (raise the hard limit, e.g. LimitNOFILE= in systemd, to serve more)"
            )
            configuration.maxSessions = budget.connections
        }
    }
}
