-- The test-set rules of `deploy-gate test-set`, written in SQL for DuckDB: the oracle that
-- `scripts/bench-duckdb.py` runs side by side with the native command on the same log, checking
-- that both choose the same cases in the same order.
--
-- Parameters (DuckDB variables, set before the query): audit (the log's path), seed,
-- min_samples, max_samples, pass_verdicts (a list of upper-case verdicts).
--
-- The rules, as the project states them:
-- * a line that is not JSON, not an object, or has no usable pipeline_id (a non-empty string,
--   or a non-zero integer) is skipped; invalid UTF-8 makes a line unreadable, so it is skipped;
-- * a line with an `is_complete` key (whatever its value) or `stage_name` equal to
--   "__pipeline_complete__" is a completion; else one with `stage_id` or `stage_type` is a
--   stage; else one with `verdict` is a completion; else it is ignored;
-- * a completion is successful when `is_complete` is JSON true, `error` is absent or null and
--   upper(verdict) is in the pass set; the last successful completion of a pipeline wins (its
--   template_id, verdict and episode_reward), and the pipeline's place is its first one;
-- * a candidate is a successful pipeline with at least one stage line and an input: the input
--   of the first stage line (file order) whose `state_snapshot.input_text` is present and not
--   null, else whose `input` is;
-- * fewer than min_samples candidates give an empty test set; more than max_samples give the
--   max_samples candidates with the smallest sha256("<seed>:<pipeline_id>") (hex digests of
--   equal length compare as the digests' bytes do), listed in the order of their first
--   successful completion.
WITH lines AS (
    -- Every line as text, numbered in file order (no quoting, no delimiter: the line whole).
    SELECT o, line
    FROM read_csv(getvariable('audit'), columns = {'line': 'VARCHAR'}, header = false,
                  delim = chr(1), quote = '', escape = '', ignore_errors = true,
                  max_line_size = 268435456)
         WITH ORDINALITY AS t(line, o)
),
fields AS (
    -- One parse per line for every field the rules read (NULL: the line is not JSON). A key
    -- present with a null value gives the JSON value null, an absent key SQL NULL.
    SELECT o, try(json_extract(line, ['$.pipeline_id', '$.is_complete', '$.stage_name',
                                      '$.stage_id', '$.stage_type', '$.verdict', '$.error',
                                      '$.state_snapshot.input_text', '$.input',
                                      '$.template_id', '$.episode_reward'])) AS f
    FROM lines
),
entries AS (
    SELECT o,
           CASE json_type(f[1])
               WHEN 'VARCHAR' THEN nullif(f[1] ->> '$', '')
               WHEN 'BIGINT' THEN nullif(CAST(f[1] AS VARCHAR), '0')
               WHEN 'UBIGINT' THEN nullif(CAST(f[1] AS VARCHAR), '0')
           END AS id,
           json_type(f[1]) = 'VARCHAR' AS textual,
           coalesce(f[2] IS NOT NULL
                        OR (json_type(f[3]) = 'VARCHAR' AND f[3] ->> '$' = '__pipeline_complete__')
                        OR (f[4] IS NULL AND f[5] IS NULL AND f[6] IS NOT NULL),
                    false) AS completion,
           (f[4] IS NOT NULL OR f[5] IS NOT NULL) AS stage_key,
           coalesce(CAST(f[2] AS VARCHAR) = 'true'
                        AND (f[7] IS NULL OR json_type(f[7]) = 'NULL')
                        AND json_type(f[6]) = 'VARCHAR'
                        AND list_contains(getvariable('pass_verdicts'), upper(f[6] ->> '$')),
                    false) AS success,
           CASE WHEN json_type(f[8]) <> 'NULL' THEN f[8]
                WHEN json_type(f[9]) <> 'NULL' THEN f[9]
           END AS input,
           f[10] AS template_id,
           f[6] AS verdict,
           f[11] AS episode_reward
    FROM fields
    WHERE f IS NOT NULL
),
pipelines AS (
    -- (An integer id and a string id with the same text are two pipelines.)
    SELECT id, textual,
           min(o) FILTER (WHERE completion AND success) AS first_success,
           arg_max(template_id, o) FILTER (WHERE completion AND success) AS template_id,
           arg_max(verdict, o) FILTER (WHERE completion AND success) AS verdict,
           arg_max(episode_reward, o) FILTER (WHERE completion AND success) AS episode_reward,
           count(*) FILTER (WHERE NOT completion AND stage_key) AS stages,
           arg_min(input, o) FILTER (WHERE NOT completion AND stage_key AND input IS NOT NULL)
               AS input_text
    FROM entries
    WHERE id IS NOT NULL
    GROUP BY id, textual
),
candidates AS (
    SELECT * FROM pipelines
    WHERE first_success IS NOT NULL AND stages > 0 AND input_text IS NOT NULL
),
counted AS (
    SELECT count(*) AS n FROM candidates
),
chosen AS (
    SELECT * FROM candidates
    WHERE (SELECT n FROM counted) >= getvariable('min_samples')
    ORDER BY sha256(CAST(getvariable('seed') AS VARCHAR) || ':' || id)
    LIMIT getvariable('max_samples')
)
SELECT id AS pipeline_id, textual, template_id, verdict AS expected_verdict, input_text,
       episode_reward, (SELECT n FROM counted) AS candidates
FROM chosen
ORDER BY first_success;
