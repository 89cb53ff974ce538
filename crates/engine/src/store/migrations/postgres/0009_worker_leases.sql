-- 9: the lease each worker takes its runs with (`switchyard worker --lease`, in milliseconds): a worker answers
-- (`seen_at`) every third of it, so one not seen for a whole lease has stopped answering.
ALTER TABLE workers ADD COLUMN lease_ms integer;
