import { EventConsumer, type IncomingEvent, type Logger, type Outbox } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { SettingsStore } from '../store/settings';
import type { KeyCache } from '../auth/key-cache';

export const CONTROL_TOPIC = 'gateway.control.v1';
const EVENT_TYPE = 'voiceapi.events.v1.GatewayControlEvent';
const { GatewayControlEvent } = voiceapi.events.v1;

/**
 * Keeps every gateway replica's view of the kill switch and of key status current.
 * A change is written to the database and announced on Kafka (through the outbox); each
 * replica consumes the topic in its own consumer group, so every replica hears every change
 * and re-reads the state. A periodic re-read is the backstop if an event is ever missed.
 */
export class ControlPlane {
  private killSwitchOn = false;
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly settings: SettingsStore,
    private readonly keys: KeyCache,
    private readonly outbox: Outbox,
    private readonly consumer: EventConsumer,
    private readonly log: Logger,
    private readonly resyncMs: number,
  ) {}

  get killSwitch(): boolean {
    return this.killSwitchOn;
  }

  get ready(): boolean {
    return this.consumer.ready;
  }

  async start(): Promise<void> {
    await this.refreshKillSwitch();
    await this.consumer.start([CONTROL_TOPIC], (e) => this.onEvent(e));
    this.resyncTimer = setInterval(() => {
      this.refreshKillSwitch().catch((err: unknown) => this.log.warn({ err }, 'kill switch re-read failed'));
    }, this.resyncMs);
    this.resyncTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.resyncTimer);
    await this.consumer.stop();
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
   * The event is stored (held) before the write, so a crash in between loses nothing, and
   * released after it, so no replica hears of the change before it can read it.
   */
  private async announced<T>(
    change: NonNullable<voiceapi.events.v1.GatewayControlEvent['change']>,
    key: string,
    write: () => Promise<T>,
  ): Promise<T> {
    const payload = GatewayControlEvent.encode({ occurTime: new Date(), change }).finish();
    const ids = await this.outbox.add([{ topic: CONTROL_TOPIC, key, type: EVENT_TYPE, payload }], { hold: true });
    const result = await write();
    await this.outbox.release(ids);
    void this.outbox.flush().catch((err: unknown) => this.log.warn({ err, key }, 'control event relay deferred'));
    return result;
  }

  private async refreshKillSwitch(): Promise<void> {
    const on = await this.settings.killSwitch();
    if (on !== this.killSwitchOn) this.log.warn({ killSwitch: on }, 'kill switch changed');
    this.killSwitchOn = on;
  }

  private async onEvent(e: IncomingEvent): Promise<void> {
    if (e.type !== EVENT_TYPE) return;
    const event = GatewayControlEvent.decode(e.payload);
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
