-- A governed call is recorded as a decision event when it is decided and an end event when it is over, joined by
-- data->>'callId' (audit/call-events.ts). The list route looks up, for the decision events of a page, whether their
-- end event exists, and filters by callId: both by this index. Only gateway events carry a callId.
CREATE INDEX audit_events_call_id ON audit_events ((data->>'callId')) WHERE data ? 'callId';
