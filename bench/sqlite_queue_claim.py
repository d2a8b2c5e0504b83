import sqlite3, time, json, os, sys
p="/tmp/sqlstore_py/q.db"
if os.path.exists(p): os.remove(p)
c=sqlite3.connect(p); c.execute("PRAGMA journal_mode=WAL"); c.execute("PRAGMA cache_size=-65536")
c.execute("CREATE TABLE import_queue (import_id VARCHAR(40) NOT NULL, seq INTEGER NOT NULL, workspace_id VARCHAR(40) NOT NULL, rows JSON NOT NULL, created_at DATETIME NOT NULL, PRIMARY KEY (import_id, seq))")
c.execute("CREATE INDEX ix_import_queue_created ON import_queue (created_at)")
blob=json.dumps([{"email": f"person{i}@gmail.com","first_name":f"First{i}","last_name":"Last","company":"Alpha Beta 12","phone":None} for i in range(5000)])
print("blob bytes", len(blob))
for s in range(40):
    c.execute("INSERT INTO import_queue VALUES ('imp_1', ?, 'ws_1', ?, ?)", (s, blob, f"2026-11-27 00:00:{s:02d}"))
c.commit()
Q="SELECT import_id FROM import_queue WHERE workspace_id = 'ws_1' GROUP BY import_id ORDER BY min(created_at) LIMIT 20"
W="SELECT workspace_id FROM import_queue GROUP BY workspace_id ORDER BY min(created_at) LIMIT 5"
def t(q):
    b=[]
    for _ in range(5):
        a=time.process_time(); c.execute(q).fetchall(); b.append(time.process_time()-a)
    return min(b)*1e3
print(c.execute("EXPLAIN QUERY PLAN "+Q).fetchall())
print("claim ms", t(Q), "workspaces ms", t(W))
c.execute("CREATE INDEX ix_import_queue_waiting ON import_queue (workspace_id, import_id, created_at)")
c.execute("ANALYZE")
print(c.execute("EXPLAIN QUERY PLAN "+Q).fetchall()); print(c.execute("EXPLAIN QUERY PLAN "+W).fetchall())
print("claim ms", t(Q), "workspaces ms", t(W))
c.execute("DROP INDEX ix_import_queue_waiting"); c.commit()
c2=sqlite3.connect(p); c2.execute("CREATE TABLE IF NOT EXISTS other (x)"); c2.commit()
def cold(q):
    b=[]
    for i in range(5):
        c2.execute("INSERT INTO other VALUES (?)", (i,)); c2.commit()
        a=time.process_time(); c.execute(q).fetchall(); b.append(time.process_time()-a)
    return sorted(b)[2]*1e3
print("cold: claim ms", cold(Q), "workspaces ms", cold(W))
c.execute("CREATE INDEX ix_import_queue_waiting ON import_queue (workspace_id, import_id, created_at)"); c.commit()
print("cold with index: claim ms", cold(Q), "workspaces ms", cold(W))
