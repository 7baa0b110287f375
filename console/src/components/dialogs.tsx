/** Dialogs that ask for a reason or a confirmation and show the server's refusal inside themselves. */
import { useState, type FormEvent, type ReactNode } from 'react';
import { messageOf } from '../api';
import { ErrorNote, Modal } from './ui';

export function ReasonDialog(props: {
  title: string;
  children?: ReactNode;
  label: string;
  required: boolean;
  submitLabel: string;
  danger?: boolean;
  onSubmit: (reason: string) => Promise<void>;
  onClose: () => void;
}) {
  const [reason, setReason] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (props.required && reason.trim() === '') {
      setError(`${props.label} is required.`);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await props.onSubmit(reason);
      props.onClose();
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  };
  return (
    <Modal title={props.title} onClose={props.onClose}>
      <form onSubmit={submit}>
        {props.children}
        <label className="field">
          <span>
            {props.label}
            {props.required ? '' : ' (optional)'}
          </span>
          <textarea rows={4} maxLength={4000} value={reason} onChange={(e) => setReason(e.target.value)} required={props.required} />
        </label>
        <ErrorNote message={error} />
        <div className="dialog-actions">
          <button type="button" className="btn plain" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" className={`btn ${props.danger ? 'danger' : 'primary'}`} disabled={busy}>
            {props.submitLabel}
          </button>
        </div>
      </form>
    </Modal>
  );
}

export function ConfirmDialog(props: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => Promise<void>;
  onClose: () => void;
}) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await props.onConfirm();
      props.onClose();
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  };
  return (
    <Modal title={props.title} onClose={props.onClose}>
      {props.children}
      <ErrorNote message={error} />
      <div className="dialog-actions">
        <button type="button" className="btn plain" onClick={props.onClose}>
          Cancel
        </button>
        <button type="button" className={`btn ${props.danger ? 'danger' : 'primary'}`} disabled={busy} onClick={() => void confirm()}>
          {props.confirmLabel}
        </button>
      </div>
    </Modal>
  );
}
