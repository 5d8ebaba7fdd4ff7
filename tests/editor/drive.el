;;; drive.el --- drives a batch Emacs through an occlint session with eglot  -*- lexical-binding: t -*-
;; Loaded after the README's eglot set-up: open $OCCLINT_EMACS_FILE (its major-mode hook starts
;; eglot), wait for occlint's diagnostics as flymake shows them, list the code actions at the
;; first one, apply the noqa action, save, see the finding clear, and
;; write what it saw as JSON to $OCCLINT_EMACS_OUT.

(require 'json)
(require 'eglot)
(require 'flymake)
(require 'cl-lib)
(require 'seq)

(defvar occlint-out '())

(defun occlint-put (key value)
  (setq occlint-out (append occlint-out (list (cons key value)))))

(defun occlint-finish ()
  (with-temp-file (getenv "OCCLINT_EMACS_OUT")
    (insert (json-encode occlint-out)))
  (kill-emacs 0))

(defun occlint-wait (seconds predicate)
  "Let the server's messages in until PREDICATE holds or SECONDS pass; its last value."
  (let ((end (+ (float-time) seconds)) (got nil))
    (while (and (not (setq got (funcall predicate))) (< (float-time) end))
      (accept-process-output nil 0.1)
      (when (bound-and-true-p flymake-mode) (flymake-start)))
    got))

(defun occlint-diagnostics ()
  (mapcar (lambda (d)
            (save-excursion
              (goto-char (flymake-diagnostic-beg d))
              (list (cons 'line (line-number-at-pos))
                    (cons 'col (1+ (current-column)))
                    (cons 'type (symbol-name (flymake-diagnostic-type d)))
                    (cons 'text (flymake-diagnostic-text d)))))
          (flymake-diagnostics)))

(condition-case err
    (progn
      (find-file (getenv "OCCLINT_EMACS_FILE"))
      (occlint-put 'mode (symbol-name major-mode))
      ;; eglot-ensure starts the server after the command that opened the file: run that hook
      (run-hooks 'post-command-hook)
      (occlint-put 'managed (and (occlint-wait 60 #'eglot-managed-p) t))
      (occlint-put 'server (let ((s (eglot-current-server)))
                             (and s (process-command (jsonrpc--process s)))))
      (occlint-wait 300 #'flymake-diagnostics)
      (let ((diags (occlint-diagnostics)))
        (occlint-put 'diagnostics diags)
        (when diags
          (let* ((d (car (flymake-diagnostics)))
                 (actions (eglot-code-actions (flymake-diagnostic-beg d)
                                              (flymake-diagnostic-end d))))
            (occlint-put 'actions (mapcar (lambda (a) (plist-get a :title))
                                          (append actions nil)))
            ;; apply the noqa action through eglot's own menu (the answer typed for us), save,
            ;; and wait for the finding to clear
            (cl-letf ((last-nonmenu-event ?\r)         ; a key, as after M-x: not the mouse menu
                      ((symbol-function 'completing-read)
                       (lambda (_prompt collection &rest _)
                         (seq-find (lambda (c) (string-match-p "noqa" (if (consp c) (car c) c)))
                                   (all-completions "" collection)))))
              (eglot-code-actions (flymake-diagnostic-beg d) (flymake-diagnostic-end d) nil t))
            (occlint-put 'after_action (buffer-substring-no-properties
                                        (line-beginning-position 7) (line-end-position 7)))
            (save-buffer)
            (occlint-put 'cleared (and (occlint-wait 300 (lambda () (null (flymake-diagnostics))))
                                       t))))))
  (error (occlint-put 'error (error-message-string err))))
(occlint-finish)
