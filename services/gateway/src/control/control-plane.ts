import {
  eventRecord,
  type EventMeta,
  type EventPublisher,
  type EventSubscriber,
  type Outbox,
} from '@voiceapi/kit/events';
import { type Logger } from '@voiceapi/kit/service';
import { Worker } from '@voiceapi/kit/work';
import { voiceapi } from '@voiceapi/proto';
import type { KeyCache } from '../auth/key-cache';
import type { SettingsStore } from '../store/settings';

const { GatewayControlEvent } = voiceapi.events.v1;
type ControlEvent = voiceapi.events.v1.GatewayControlEvent;

/**
 * Keeps every gateway replica's view of the kill switch and of key status current.
 * A change is written to the database and announced on the gateway control stream (through
 * the outbox); each replica consumes the stream in a broadcast group of its own, so every
 * replica hears every change and re-reads the state. The kill switch is also re-read when its
 * document changes (a change stream: replicas converge even while Kafka is away), and now and then
 * as the backstop if both are ever missed.
 */
export class ControlPlane {
  private killSwitchOn = false;
  /** Reads the kill switch again when its document changes, and now and then in case a change was missed. */
  private readonly resync: Worker;

  constructor(
    private readonly settings: SettingsStore,
    private readonly keys: KeyCache,
    private readonly outbox: Outbox,
    private readonly publisher: EventPublisher,
    private readonly subscriber: EventSubscriber,
    private readonly log: Logger,
    resyncMs: number,
  ) {
    subscriber.on(GatewayControlEvent, (event, meta) => this.onEvent(event, meta));
    this.resync = new Worker({
      service: 'gateway',
      job: 'kill-switch-resync',
      everyMs: resyncMs,
      wakeOn: [settings.changes()],
      log,
      pass: () => this.refreshKillSwitch(),
    });
  }

  get killSwitch(): boolean {
    return this.killSwitchOn;
  }

  get ready(): boolean {
    return this.subscriber.ready;
  }

  async start(): Promise<void> {
    await this.refreshKillSwitch();
    this.subscriber.start();
    await this.subscriber
      .waitUntilReady(30_000)
      .catch((err: unknown) =>
        this.log.warn({ err }, 'control events group not joined yet; the re-read covers the gap'),
      );
    // A change between the first read and the group's join was announced before this replica
    // listened: the re-read's first pass reads once more (then it reads now and then).
    this.resync.start();
    await this.resync.idle();
  }

  async stop(): Promise<void> {
    await this.resync.stop();
    await this.subscriber.stop();
  }

  async setKillSwitch(enabled: boolean): Promise<void> {
    await this.announced({ $case: 'killSwitchChanged', killSwitchChanged: { enabled } }, 'kill-switch', async () => {
      await this.settings.setKillSwitch(enabled);
      this.killSwitchOn = enabled;
    });
  }

  /** Runs a write that changes a key's status, name or scopes; every replica drops the key. */
  async changeKey<T>(keyId: string, tenantId: string, write: () => Promise<T>): Promise<T> {
    return this.announced({ $case: 'apiKeyChanged', apiKeyChanged: { keyId, tenantId } }, keyId, async () => {
      const result = await write();
      this.keys.evictKeyId(keyId);
      return result;
    });
  }

  /**
   * The write and its event as one (the kit's `announce`): the event is stored before the write,
   * so a crash in between loses nothing, and goes out after it, so no replica hears of the change
   * before it can read it. A write that refused takes its event with it; one that failed part-way
   * announces anyway: the event only makes replicas read again, harmless if nothing changed.
   */
  private async announced<T>(
    change: NonNullable<ControlEvent['change']>,
    key: string,
    write: () => Promise<T>,
  ): Promise<T> {
    const event = eventRecord(GatewayControlEvent, key, { occurTime: new Date(), change });
    const result = await this.outbox.announce([event], write, {
      readBack: {
        applied: 'always',
        why: 'a control event only makes replicas drop what they cached and read it again',
      },
    });
    // The replica relaying the outbox sends it now; another sends it itself as well, so every
    // replica hears of the change at once whichever relays, and a relay that holds its lease alone
    // need not look for it (decision 0141). Heard twice it is read twice: harmless.
    const sent = this.outbox.relaying ? this.outbox.flush() : this.publisher.send([event]);
    void sent.catch((err: unknown) => this.log.warn({ err, key }, 'control event deferred to the relay'));
    return result;
  }

  private async refreshKillSwitch(): Promise<void> {
    const on = await this.settings.killSwitch();
    if (on !== this.killSwitchOn) this.log.warn({ killSwitch: on }, 'kill switch changed');
    this.killSwitchOn = on;
  }

  private async onEvent(event: ControlEvent, _meta: EventMeta): Promise<void> {
    switch (event.change?.$case) {
      case 'killSwitchChanged':
        await this.refreshKillSwitch();
        break;
      case 'apiKeyChanged':
        this.keys.evictKeyId(event.change.apiKeyChanged.keyId);
        break;
      default:
        break;
    }
  }
}
