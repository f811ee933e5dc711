import PinwheelCore

/// A producer limited to a tenant changes only that tenant's points.
extension Ingest {
    /// Why `change` is outside `tenant`, nil when it is inside: an upsert must carry the tenant in
    /// its tenant property and may not take over another tenant's point; a delete may only remove the
    /// tenant's own points (deleting a key no point has changes nothing, as for any producer). The
    /// reason never names another tenant.
    func scopeProblem(_ change: Change, _ tenant: String) -> String? {
        let column = tenantColumn
        if case .upsert(_, _, _, let properties, _) = change, !ViewerScope.names(tenant, properties[column]) {
            let given = properties[column].map { "\($0)" } ?? "no \(column)"
            return "outside this producer's tenant: the point must have \(column) \"\(tenant)\", this one has \(given)"
        }
        if let current = live.value(of: change.key, column: column), !ViewerScope.names(tenant, current) {
            return "outside this producer's tenant: the point belongs to another tenant"
        }
        return nil
    }
}
