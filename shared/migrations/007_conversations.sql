-- Conversations and their turns: the gateway writes the user's question as a message and
-- passes the last turns with each new question; the validator writes finq's answer with
-- the route it answered (intent, entities, tool calls) so a follow-up can inherit from it.
CREATE TABLE conversations (
    id         text PRIMARY KEY,
    user_id    text NOT NULL,
    title      text NOT NULL,   -- the first question, trimmed at a word boundary
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX conversations_user_updated ON conversations (user_id, updated_at DESC);

CREATE TABLE messages (
    id                  bigserial PRIMARY KEY,
    conversation_id     text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    request_id          text NOT NULL,
    role                text NOT NULL CHECK (role IN ('user', 'assistant')),
    content             text NOT NULL,
    intent              text,               -- assistant turns
    route               jsonb,              -- assistant turns: the RouteSummary answered
    needs_clarification boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL DEFAULT now(),
    -- A redelivered stage cannot write a turn twice.
    UNIQUE (request_id, role)
);

CREATE INDEX messages_conversation ON messages (conversation_id, id);

-- Questions asked before this migration become conversations of their own history.
INSERT INTO conversations (id, user_id, title, created_at, updated_at)
SELECT DISTINCT ON (conversation_id) conversation_id, user_id, left(question, 80), created_at,
       created_at
FROM questions
ORDER BY conversation_id, created_at;

INSERT INTO messages (conversation_id, request_id, role, content, created_at)
SELECT conversation_id, request_id, 'user', question, created_at FROM questions;

INSERT INTO messages (conversation_id, request_id, role, content, needs_clarification, created_at)
SELECT q.conversation_id, a.request_id, 'assistant', a.answer,
       coalesce((a.body ->> 'needs_clarification')::boolean, false), a.created_at
FROM answers a JOIN questions q USING (request_id);
