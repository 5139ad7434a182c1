/**
 * Concurrency child: opens the database file with the driver itself, prints "ready", and on "hold"
 * takes SQLite's write lock (BEGIN IMMEDIATE), prints "holding", and keeps it until "release",
 * then commits and prints "released". Writers in other processes must wait for it (busy_timeout),
 * not fail.
 * argv: <db path>
 */
import { createInterface } from 'node:readline';
import Database from 'libsql';

const [path] = process.argv.slice(2) as [string];
const db = new Database(path);
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'hold') {
    db.exec('BEGIN IMMEDIATE');
    db.prepare('UPDATE organizations SET plan_name = plan_name').run();
    process.stdout.write('holding\n');
  } else if (line === 'release') {
    db.exec('COMMIT');
    process.stdout.write('released\n');
    break;
  }
}
db.close();
process.exit(0);
