import { modelOf, platformModel, type WakeSource } from '@voiceapi/kit/mongo';
import { Schema, type Connection, type Model } from 'mongoose';

interface SettingsRecord {
  _id: string;
  killSwitch: boolean;
  updatedAt: Date;
}

const settingsSchema = new Schema<SettingsRecord>(
  { _id: String, killSwitch: { type: Boolean, required: true }, updatedAt: { type: Date, required: true } },
  { collection: 'platform_settings', versionKey: false },
);

const GLOBAL = 'global';

/** Platform-wide settings: one document. */
export class SettingsStore {
  private readonly model: Model<SettingsRecord>;
  constructor(conn: Connection) {
    this.model = platformModel(
      modelOf(conn, 'PlatformSettings', settingsSchema),
      'the kill switch and other platform-wide settings',
    );
  }

  /** The settings changed (by any replica): wakes every replica's re-read of the kill switch. */
  changes(): WakeSource {
    return { model: this.model, operations: ['insert', 'update', 'replace'] };
  }

  async killSwitch(): Promise<boolean> {
    const doc = await this.model.findById(GLOBAL).lean<SettingsRecord>();
    return doc?.killSwitch ?? false;
  }

  async setKillSwitch(enabled: boolean): Promise<void> {
    await this.model.updateOne(
      { _id: GLOBAL },
      { $set: { killSwitch: enabled, updatedAt: new Date() } },
      { upsert: true },
    );
  }
}
