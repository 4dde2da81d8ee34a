package dashboard

// AuditText is auditText, for the external tests.
var AuditText = auditText
