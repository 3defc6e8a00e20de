"""The steward's release report: risk, information loss, the JSON document and its HTML view."""
