// What the page tells the user, by kind: errors (something failed: what, and what to do next),
// warnings and information. Each message has a scope; when the shard or the task changes, the
// messages that belonged to the old one no longer apply and are dropped.

export type MessageKind = 'error' | 'warning' | 'info';
/** `task`: about the selected task's runs; `shard`: about the open shard; `page`: until dismissed. */
export type MessageScope = 'task' | 'shard' | 'page';

export interface Message {
  id: number;
  kind: MessageKind;
  text: string;
  scope: MessageScope;
}

let nextId = 1;

/** The message list; components render it, state classes post to it. */
export class Messages {
  list = $state.raw<Message[]>([]);

  post(kind: MessageKind, text: string, scope: MessageScope = 'task'): Message {
    const m = { id: nextId++, kind, text, scope };
    // The same text twice is one message (e.g. a retried action that fails the same way).
    this.list = [...this.list.filter((x) => x.text !== text), m];
    return m;
  }

  error(text: string, scope: MessageScope = 'task') {
    return this.post('error', text, scope);
  }
  warn(text: string, scope: MessageScope = 'task') {
    return this.post('warning', text, scope);
  }
  info(text: string, scope: MessageScope = 'task') {
    return this.post('info', text, scope);
  }

  dismiss(id: number) {
    this.list = this.list.filter((m) => m.id !== id);
  }

  /** Drops what no longer applies: `task` messages on a task change, both on a shard change. */
  clear(scope: 'task' | 'shard' | 'all') {
    if (scope === 'all') this.list = [];
    else if (scope === 'shard') this.list = this.list.filter((m) => m.scope === 'page');
    else this.list = this.list.filter((m) => m.scope !== 'task');
  }

  /** Drops the information messages (a new action started; its own outcome replaces them). */
  clearInfo() {
    this.list = this.list.filter((m) => m.kind !== 'info');
  }

  get errors(): Message[] {
    return this.list.filter((m) => m.kind === 'error');
  }
}
